"""CycleGAN after junyanz/pytorch-CycleGAN-and-pix2pix: ResNet generators opening with
``ReflectionPad2d(3)`` and a 7 x 7 convolution, ``InstanceNorm2d`` throughout (built with
``functools.partial``, so the convolutions keep their biases), residual blocks padded by
reflection, upsampling by ``ConvTranspose2d(output_padding=1)``; 70 x 70-style PatchGAN
discriminators with ``LeakyReLU(0.2)``; the LSGAN objective (``MSELoss`` against
``expand_as``-ed real/fake label buffers), the cycle and identity ``L1Loss`` terms, both
generators' parameters chained by ``itertools.chain`` into one ``Adam``, ``set_requires_grad``
freezing the discriminators during the generators' step, the discriminators' loss halved on
``detach``-ed fakes, and a ``LambdaLR`` that keeps the rate then decays it linearly
(made-up 16 x 16 images: horizontal stripes in domain A, vertical ones in B; init_weights with
``normal_(0, 0.02)``; no image pool, whose random replay the two libraries cannot share)."""

import functools
import itertools

import numpy as np
import torch
import torch.nn as nn


class ResnetBlock(nn.Module):
    def __init__(self, dim, norm_layer, use_bias):
        super().__init__()
        self.conv_block = nn.Sequential(
            nn.ReflectionPad2d(1),
            nn.Conv2d(dim, dim, kernel_size=3, padding=0, bias=use_bias),
            norm_layer(dim),
            nn.ReLU(True),
            nn.ReflectionPad2d(1),
            nn.Conv2d(dim, dim, kernel_size=3, padding=0, bias=use_bias),
            norm_layer(dim),
        )

    def forward(self, x):
        return x + self.conv_block(x)


class ResnetGenerator(nn.Module):
    def __init__(self, input_nc=1, output_nc=1, ngf=4, n_blocks=2, norm_layer=nn.BatchNorm2d):
        super().__init__()
        if type(norm_layer) is functools.partial:
            use_bias = norm_layer.func == nn.InstanceNorm2d
        else:
            use_bias = norm_layer == nn.InstanceNorm2d
        model = [
            nn.ReflectionPad2d(3),
            nn.Conv2d(input_nc, ngf, kernel_size=7, padding=0, bias=use_bias),
            norm_layer(ngf),
            nn.ReLU(True),
        ]
        n_downsampling = 2
        for i in range(n_downsampling):
            mult = 2**i
            model += [
                nn.Conv2d(
                    ngf * mult, ngf * mult * 2, kernel_size=3, stride=2, padding=1, bias=use_bias
                ),
                norm_layer(ngf * mult * 2),
                nn.ReLU(True),
            ]
        mult = 2**n_downsampling
        for _ in range(n_blocks):
            model += [ResnetBlock(ngf * mult, norm_layer=norm_layer, use_bias=use_bias)]
        for i in range(n_downsampling):
            mult = 2 ** (n_downsampling - i)
            model += [
                nn.ConvTranspose2d(
                    ngf * mult,
                    int(ngf * mult / 2),
                    kernel_size=3,
                    stride=2,
                    padding=1,
                    output_padding=1,
                    bias=use_bias,
                ),
                norm_layer(int(ngf * mult / 2)),
                nn.ReLU(True),
            ]
        model += [
            nn.ReflectionPad2d(3),
            nn.Conv2d(ngf, output_nc, kernel_size=7, padding=0),
            nn.Tanh(),
        ]
        self.model = nn.Sequential(*model)

    def forward(self, input):
        return self.model(input)


class NLayerDiscriminator(nn.Module):
    def __init__(self, input_nc=1, ndf=4, n_layers=2, norm_layer=nn.BatchNorm2d):
        super().__init__()
        use_bias = norm_layer.func == nn.InstanceNorm2d
        kw, padw = 4, 1
        sequence = [
            nn.Conv2d(input_nc, ndf, kernel_size=kw, stride=2, padding=padw),
            nn.LeakyReLU(0.2, True),
        ]
        nf_mult = 1
        for n in range(1, n_layers):
            nf_mult_prev, nf_mult = nf_mult, min(2**n, 8)
            sequence += [
                nn.Conv2d(
                    ndf * nf_mult_prev,
                    ndf * nf_mult,
                    kernel_size=kw,
                    stride=2,
                    padding=padw,
                    bias=use_bias,
                ),
                norm_layer(ndf * nf_mult),
                nn.LeakyReLU(0.2, True),
            ]
        sequence += [nn.Conv2d(ndf * nf_mult, 1, kernel_size=kw, stride=1, padding=padw)]
        self.model = nn.Sequential(*sequence)

    def forward(self, input):
        return self.model(input)


class GANLoss(nn.Module):
    def __init__(self, target_real_label=1.0, target_fake_label=0.0):
        super().__init__()
        self.register_buffer("real_label", torch.tensor(target_real_label))
        self.register_buffer("fake_label", torch.tensor(target_fake_label))
        self.loss = nn.MSELoss()

    def __call__(self, prediction, target_is_real):
        target_tensor = self.real_label if target_is_real else self.fake_label
        return self.loss(prediction, target_tensor.expand_as(prediction))


def init_weights(net, init_gain=0.02):
    def init_func(m):
        classname = m.__class__.__name__
        if hasattr(m, "weight") and (
            classname.find("Conv") != -1 or classname.find("Linear") != -1
        ):
            nn.init.normal_(m.weight.data, 0.0, init_gain)
            if hasattr(m, "bias") and m.bias is not None:
                nn.init.constant_(m.bias.data, 0.0)

    net.apply(init_func)
    return net


class CycleGANModel(nn.Module):
    def __init__(self):
        super().__init__()
        norm_layer = functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)
        self.netG_A = init_weights(ResnetGenerator(norm_layer=norm_layer))
        self.netG_B = init_weights(ResnetGenerator(norm_layer=norm_layer))
        self.netD_A = init_weights(NLayerDiscriminator(norm_layer=norm_layer))
        self.netD_B = init_weights(NLayerDiscriminator(norm_layer=norm_layer))


def set_requires_grad(nets, requires_grad=False):
    for net in nets:
        for param in net.parameters():
            param.requires_grad = requires_grad


def stripes(rng, n, vertical):
    grid = np.arange(16)[:, None] * np.ones((1, 16))
    grid = grid.T if vertical else grid
    phase = rng.uniform(0, 2 * np.pi, (n, 1, 1))
    return np.sin(grid * 1.2 + phase)[:, None].astype(np.float32)


def build():
    return CycleGANModel()


def train(m, epochs=4, n_epochs_decay=2, lambda_A=10.0, lambda_B=10.0, lambda_idt=0.5):
    rng = np.random.default_rng(0)
    criterionGAN, criterionCycle, criterionIdt = GANLoss(), nn.L1Loss(), nn.L1Loss()
    optimizer_G = torch.optim.Adam(
        itertools.chain(m.netG_A.parameters(), m.netG_B.parameters()), lr=2e-3, betas=(0.5, 0.999)
    )
    optimizer_D = torch.optim.Adam(
        itertools.chain(m.netD_A.parameters(), m.netD_B.parameters()), lr=2e-3, betas=(0.5, 0.999)
    )

    def lambda_rule(epoch):
        return 1.0 - max(0, epoch + 1 - (epochs - n_epochs_decay)) / float(n_epochs_decay + 1)

    schedulers = [
        torch.optim.lr_scheduler.LambdaLR(o, lr_lambda=lambda_rule)
        for o in (optimizer_G, optimizer_D)
    ]
    losses = []
    for epoch in range(epochs):
        real_A = torch.from_numpy(stripes(rng, 2, vertical=False))
        real_B = torch.from_numpy(stripes(rng, 2, vertical=True))
        fake_B = m.netG_A(real_A)
        rec_A = m.netG_B(fake_B)
        fake_A = m.netG_B(real_B)
        rec_B = m.netG_A(fake_A)
        # G_A and G_B
        set_requires_grad([m.netD_A, m.netD_B], False)
        optimizer_G.zero_grad()
        loss_idt_A = criterionIdt(m.netG_A(real_B), real_B) * lambda_B * lambda_idt
        loss_idt_B = criterionIdt(m.netG_B(real_A), real_A) * lambda_A * lambda_idt
        loss_G_A = criterionGAN(m.netD_A(fake_B), True)
        loss_G_B = criterionGAN(m.netD_B(fake_A), True)
        loss_cycle_A = criterionCycle(rec_A, real_A) * lambda_A
        loss_cycle_B = criterionCycle(rec_B, real_B) * lambda_B
        loss_G = loss_G_A + loss_G_B + loss_cycle_A + loss_cycle_B + loss_idt_A + loss_idt_B
        loss_G.backward()
        optimizer_G.step()
        # D_A and D_B
        set_requires_grad([m.netD_A, m.netD_B], True)
        optimizer_D.zero_grad()
        loss_D = []
        for netD, real, fake in ((m.netD_A, real_B, fake_B), (m.netD_B, real_A, fake_A)):
            loss_D_real = criterionGAN(netD(real), True)
            loss_D_fake = criterionGAN(netD(fake.detach()), False)
            loss = (loss_D_real + loss_D_fake) * 0.5
            loss.backward()
            loss_D.append(loss.item())
        optimizer_D.step()
        for scheduler in schedulers:
            scheduler.step()
        lr = optimizer_G.param_groups[0]["lr"]
        print(f"epoch {epoch} lr {lr:.7f} G {loss_G.item():.4f} D {loss_D[0]:.4f} {loss_D[1]:.4f}")
        losses += [loss_G.item(), loss_cycle_A.item(), loss_idt_B.item(), *loss_D]
    return losses


if __name__ == "__main__":
    train(build())
