"""pytorch/examples' DCGAN: a generator of transposed convolutions with batch norm, ReLU and a
Tanh, a discriminator of strided convolutions with LeakyReLU and a Sigmoid, the ``weights_init``
applied by class name, ``BCELoss`` on labels made with ``torch.full`` and refilled in place, two
Adam optimizers, the fake batch detached for the discriminator's step and reused for the
generator's, and the generator in eval mode on fixed noise (16 x 16 synthetic images of blobs
instead of LSUN; the noise drawn with NumPy so both libraries see the same)."""

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

nc, nz, ngf, ndf = 1, 8, 8, 8


# custom weights initialization called on netG and netD
def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            # state size. (ngf*4) x 4 x 4
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # state size. (ngf*2) x 8 x 8
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
            # state size. (nc) x 16 x 16
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            # input is (nc) x 16 x 16
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 8 x 8
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 4 x 4
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)


class GAN(nn.Module):
    """Both networks in one module, so that one state dict holds the starting weights."""

    def __init__(self):
        super().__init__()
        self.netG = Generator()
        self.netG.apply(weights_init)
        self.netD = Discriminator()
        self.netD.apply(weights_init)


def blobs(rng, n):
    """Images in [-1, 1] of one bright Gaussian blob each, at a random place."""
    ys, xs = np.mgrid[0:16, 0:16]
    centers = rng.uniform(4, 12, (n, 2, 1, 1))
    r2 = (ys - centers[:, 0]) ** 2 + (xs - centers[:, 1]) ** 2
    return (2 * np.exp(-r2 / 8) - 1)[:, None].astype(np.float32)


def build():
    return GAN()


def train(gan, niter=2, batch_size=8):
    rng = np.random.default_rng(0)
    device = torch.device("cpu")
    netG, netD = gan.netG.to(device), gan.netD.to(device)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(blobs(rng, 4 * batch_size)))
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False)
    criterion = nn.BCELoss()
    fixed_noise = torch.from_numpy(rng.standard_normal((4, nz, 1, 1)).astype(np.float32))
    real_label = 1
    fake_label = 0
    optimizerD = optim.Adam(netD.parameters(), lr=0.002, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=0.002, betas=(0.5, 0.999))
    losses = []
    for epoch in range(niter):
        for i, (real_cpu,) in enumerate(dataloader, 0):
            ############################
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            ###########################
            # train with real
            netD.zero_grad()
            real_cpu = real_cpu.to(device)
            batch_size = real_cpu.size(0)
            label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)

            output = netD(real_cpu)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            # train with fake
            noise = torch.from_numpy(rng.standard_normal((batch_size, nz, 1, 1)))
            noise = noise.float().to(device)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()

            ############################
            # (2) Update G network: maximize log(D(G(z)))
            ###########################
            netG.zero_grad()
            label.fill_(real_label)  # fake labels are real for generator cost
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            D_G_z2 = output.mean().item()
            optimizerG.step()

            print(
                f"[{epoch}/{niter}][{i}/{len(dataloader)}] Loss_D: {errD.item():.4f} "
                f"Loss_G: {errG.item():.4f} D(x): {D_x:.4f} D(G(z)): {D_G_z1:.4f} / {D_G_z2:.4f}"
            )
            losses += [errD.item(), errG.item(), D_x, D_G_z1, D_G_z2]
    netG.eval()
    with torch.no_grad():
        fake = netG(fixed_noise).detach().cpu()
    losses += [fake.mean().item(), fake.std().item(), netG.main[1].running_var.sum().item()]
    return losses


if __name__ == "__main__":
    train(build())
