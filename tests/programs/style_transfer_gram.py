"""Neural style transfer in miniature, after PyTorch's "Neural Transfer" tutorial: a small fixed
conv feature extractor behind a normalization layer, content and style losses on its features
(the style loss on Gram matrices), the network cut after the last loss, and the input image
itself as the parameter: first L-BFGS with a closure, then Adam with a total-variation term,
clamping the image to [0, 1] (made-up images instead of photos, drawn with NumPy)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
cnn_normalization_mean = torch.tensor([0.485, 0.456, 0.406])
cnn_normalization_std = torch.tensor([0.229, 0.224, 0.225])


def gram_matrix(input):
    a, b, c, d = input.size()
    features = input.view(a * b, c * d)
    G = torch.mm(features, features.t())
    return G.div(a * b * c * d)


def batched_gram(features):
    b, c, h, w = features.shape
    f = features.reshape(b, c, h * w)
    return torch.bmm(f, f.transpose(1, 2)) / (c * h * w)


class ContentLoss(nn.Module):
    def __init__(self, target):
        super().__init__()
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


class StyleLoss(nn.Module):
    def __init__(self, target_feature):
        super().__init__()
        self.target = gram_matrix(target_feature).detach()
        self.target_bmm = batched_gram(target_feature).detach()

    def forward(self, input):
        G = gram_matrix(input)
        G_einsum = torch.einsum("bchw,bdhw->bcd", input, input) / input[0].numel()
        self.loss = F.mse_loss(G, self.target) + F.mse_loss(G_einsum, self.target_bmm)
        return input


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = mean.clone().detach().view(-1, 1, 1)
        self.std = std.clone().detach().view(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std


def build():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.AvgPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.AvgPool2d(2),
        nn.Conv2d(16, 16, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.Conv2d(16, 16, 3, padding=1),
    )


def get_style_model_and_losses(cnn, style_img, content_img, content_layers, style_layers):
    normalization = Normalization(cnn_normalization_mean, cnn_normalization_std)
    content_losses, style_losses = [], []
    model = nn.Sequential(normalization)
    i = 0
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = f"conv_{i}"
        elif isinstance(layer, nn.ReLU):
            name = f"relu_{i}"
            # the in-place ReLU would change the features the losses saw
            layer = nn.ReLU(inplace=False)
        elif isinstance(layer, nn.AvgPool2d):
            name = f"pool_{i}"
        else:
            raise RuntimeError(f"Unrecognized layer: {layer.__class__.__name__}")
        model.add_module(name, layer)
        if name in content_layers:
            target = model(content_img).detach()
            content_loss = ContentLoss(target)
            model.add_module(f"content_loss_{i}", content_loss)
            content_losses.append(content_loss)
        if name in style_layers:
            target_feature = model(style_img).detach()
            style_loss = StyleLoss(target_feature)
            model.add_module(f"style_loss_{i}", style_loss)
            style_losses.append(style_loss)
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], (ContentLoss, StyleLoss)):
            break
    model = model[: (i + 1)]
    return model, style_losses, content_losses


def total_variation(img):
    dh = img[:, :, 1:, :] - img[:, :, :-1, :]
    dw = img[:, :, :, 1:] - img[:, :, :, :-1]
    return dh.abs().mean() + dw.abs().mean()


def images(rng):
    yy, xx = np.mgrid[0:16, 0:16] / 15.0
    stripes = 0.5 + 0.5 * np.sin(2 * np.pi * xx[::2, ::2] * 3)[None].repeat(3, 0)
    style = torch.from_numpy((stripes * rng.uniform(0.5, 1, (3, 1, 1)))[None].astype(np.float32))
    style_img = F.interpolate(style, size=(16, 16), mode="bilinear", align_corners=False)
    content = np.stack([xx, yy, (xx + yy) / 2])[None] + 0.05 * rng.standard_normal((1, 3, 16, 16))
    content_img = torch.tensor(np.clip(content, 0, 1), dtype=torch.float32)
    return style_img.to(device), content_img.to(device)


def run_style_transfer(cnn, content_img, style_img, input_img, num_steps=12, style_weight=1e4):
    model, style_losses, content_losses = get_style_model_and_losses(
        cnn, style_img, content_img, ["conv_2"], ["conv_1", "conv_2", "conv_3"]
    )
    input_img.requires_grad_(True)
    model.eval()
    model.requires_grad_(False)
    optimizer = optim.LBFGS([input_img], max_iter=4)
    losses = []
    run = [0]
    while run[0] <= num_steps:

        def closure():
            with torch.no_grad():
                input_img.clamp_(0, 1)
            optimizer.zero_grad()
            model(input_img)
            style_score = sum(sl.loss for sl in style_losses) * style_weight
            content_score = sum(cl.loss for cl in content_losses)
            loss = style_score + content_score
            loss.backward()
            run[0] += 1
            if run[0] % 4 == 0:
                print(
                    f"run {run}: Style Loss : {style_score.item():4f} "
                    f"Content Loss: {content_score.item():4f}"
                )
            return style_score + content_score

        losses.append(optimizer.step(closure).item())
    with torch.no_grad():
        input_img.clamp_(0, 1)

    # a few Adam steps with a smoothness term, the other common way to optimize the image
    optimizer = optim.Adam([input_img], lr=0.01)
    for _ in range(3):
        optimizer.zero_grad()
        model(input_img)
        loss = style_weight * torch.stack([sl.loss for sl in style_losses]).sum()
        loss = loss + content_losses[0].loss + 0.1 * total_variation(input_img)
        loss.backward()
        optimizer.step()
        input_img.data.clamp_(0, 1)
        losses.append(loss.item())
    return input_img, losses


def train(cnn):
    cnn = cnn.to(device).eval()
    cnn.requires_grad_(False)
    style_img, content_img = images(np.random.default_rng(0))
    assert style_img.size() == content_img.size()
    input_img = content_img.clone()
    output, losses = run_style_transfer(cnn, content_img, style_img, input_img)
    print(f"image mean {output.mean().item():.4f} min {output.min().item():.4f}")
    losses.append(output.mean().item())
    return losses


if __name__ == "__main__":
    train(build())
