"""Grad-CAM as the tutorials write it: a small CNN trained on generated images (each class a
bright pattern drawn at a random place), then a forward hook on the last conv block keeps its
activations, a full backward hook (or, in the second variant, ``register_hook`` on the kept
activation) keeps their gradient, the class score is backpropagated as a one-hot vector after
``model.zero_grad()``, the channels are weighted by their gradients' global average, and the
``relu`` of the weighted sum is upsampled bilinearly to the input size and min-max normalised.
A forward pre-hook counts the calls, every handle is removed at the end, and the accuracy is
measured under ``torch.no_grad()``; a last hook keeps the first block's feature maps for one
call, removed by leaving its ``with`` block."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallCNN(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.block1 = nn.Sequential(nn.Conv2d(1, 6, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.block2 = nn.Sequential(nn.Conv2d(6, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(8, classes)

    def forward(self, x):
        x = self.block2(self.block1(x))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


PATTERNS = [np.ones((1, 4)), np.ones((4, 1)), np.eye(4)]  # the classes: -, |, \\


def make_images(rng, n):
    """Noise with one class's pattern drawn bright at a random place; also the pattern's
    pixels, to see whether the heat lands on them."""
    labels = rng.integers(0, 3, n)
    corners = rng.integers(0, 8, (n, 2))
    masks = np.zeros((n, 1, 12, 12), dtype=np.float32)
    for i, (label, (row, col)) in enumerate(zip(labels, corners)):
        height, width = PATTERNS[label].shape
        masks[i, 0, row : row + height, col : col + width] = PATTERNS[label]
    images = rng.normal(0.0, 0.2, masks.shape).astype(np.float32) + 2.0 * masks
    return torch.from_numpy(images), torch.from_numpy(labels), torch.from_numpy(masks)


class GradCAM:
    def __init__(self, model, target_layer, use_tensor_hook=False):
        self.model = model
        self.activations = None
        self.gradients = None
        self.calls = 0
        self.use_tensor_hook = use_tensor_hook
        self.handles = [
            target_layer.register_forward_pre_hook(self.count_call),
            target_layer.register_forward_hook(self.save_activation),
        ]
        if not use_tensor_hook:
            self.handles.append(target_layer.register_full_backward_hook(self.save_gradient))

    def count_call(self, module, inputs):
        self.calls += 1

    def save_activation(self, module, inputs, output):
        self.activations = output
        output.retain_grad()
        if self.use_tensor_hook:
            output.register_hook(self.save_tensor_gradient)

    def save_gradient(self, module, grad_input, grad_output):
        self.gradients = grad_output[0].detach()

    def save_tensor_gradient(self, grad):
        self.gradients = grad.detach()

    def __call__(self, images, class_idx=None):
        self.model.zero_grad()
        scores = self.model(images)
        if class_idx is None:
            class_idx = scores.argmax(dim=1)
        one_hot = F.one_hot(class_idx, scores.size(1)).float()
        scores.backward(gradient=one_hot)
        weights = self.gradients.mean(dim=(2, 3), keepdim=True)
        cam = F.relu((weights * self.activations.detach()).sum(dim=1, keepdim=True))
        cam = F.interpolate(cam, size=images.shape[-2:], mode="bilinear", align_corners=False)
        flat = cam.view(cam.size(0), -1)
        low, high = flat.min(dim=1, keepdim=True)[0], flat.max(dim=1, keepdim=True)[0]
        cam = ((flat - low) / (high - low + 1e-8)).view_as(cam)
        return cam, class_idx

    def remove(self):
        for handle in self.handles:
            handle.remove()


def build():
    return SmallCNN()


def train(model, epochs=6):
    rng = np.random.default_rng(0)
    images, labels, _ = make_images(rng, 64)
    test_images, test_labels, masks = make_images(rng, 8)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    losses = []
    for epoch in range(epochs):
        model.train()
        for start in range(0, 64, 16):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images[start : start + 16]), labels[start : start + 16])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            accuracy = (model(test_images).argmax(1) == test_labels).float().mean().item()
        print(f"epoch {epoch}: loss {losses[-1]:.4f} test accuracy {accuracy:.3f}")

    for use_tensor_hook in (False, True):
        cam = GradCAM(model, model.block2, use_tensor_hook=use_tensor_hook)
        heatmaps, _ = cam(test_images.clone().requires_grad_(True))
        grad_norm = cam.activations.grad.norm().item()
        cam.remove()
        # the mean heat on the pattern's pixels, against the mean over the whole image
        on_pattern = (heatmaps * masks).sum() / masks.sum()
        print(
            f"tensor hook {use_tensor_hook}: calls {cam.calls} shape {tuple(heatmaps.shape)} "
            f"mean {heatmaps.mean().item():.4f} std {heatmaps.std().item():.4f} "
            f"on the pattern {on_pattern.item():.4f}"
        )
        losses += [heatmaps.mean().item(), heatmaps.std().item(), on_pattern.item(), grad_norm]
        losses += heatmaps.sum(dim=(1, 2, 3)).tolist()
    # the first block's feature maps, kept for plotting by a hook that lives for one call
    features = []
    hook = model.block1.register_forward_hook(lambda m, args, out: features.append(out))
    with hook, torch.no_grad():
        model(test_images)
    model(test_images)
    assert cam.calls == 1 and len(features) == 1  # removed hooks are not called again
    print(f"first block features {tuple(features[0].shape)} mean {features[0].mean().item():.4f}")
    losses.append(features[0].mean().item())
    return losses


if __name__ == "__main__":
    train(build())
