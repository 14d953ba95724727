"""A tiny CLIP: an image tower ending in CLIP's attention pooling (the mean token prepended,
a positional embedding, ``F.multi_head_attention_forward`` with separate q/k/v weights), a text
tower read at each caption's end token, a learnable clamped temperature and the symmetric
cross-entropy, trained with AdamW on generated image/caption pairs (drawn with NumPy)."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class AttentionPool2d(nn.Module):
    def __init__(self, spacial_dim, embed_dim, num_heads, output_dim=None):
        super().__init__()
        self.positional_embedding = nn.Parameter(
            torch.randn(spacial_dim**2 + 1, embed_dim) / embed_dim**0.5
        )
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.c_proj = nn.Linear(embed_dim, output_dim or embed_dim)
        self.num_heads = num_heads

    def forward(self, x):
        x = x.flatten(start_dim=2).permute(2, 0, 1)  # NCHW -> (HW)NC
        x = torch.cat([x.mean(dim=0, keepdim=True), x], dim=0)  # (HW+1)NC
        x = x + self.positional_embedding[:, None, :].to(x.dtype)
        x, _ = F.multi_head_attention_forward(
            query=x[:1],
            key=x,
            value=x,
            embed_dim_to_check=x.shape[-1],
            num_heads=self.num_heads,
            q_proj_weight=self.q_proj.weight,
            k_proj_weight=self.k_proj.weight,
            v_proj_weight=self.v_proj.weight,
            in_proj_weight=None,
            in_proj_bias=torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias]),
            bias_k=None,
            bias_v=None,
            add_zero_attn=False,
            dropout_p=0.0,
            out_proj_weight=self.c_proj.weight,
            out_proj_bias=self.c_proj.bias,
            use_separate_proj_weight=True,
            training=self.training,
            need_weights=False,
        )
        return x.squeeze(0)


class ImageEncoder(nn.Module):
    def __init__(self, width=16, embed_dim=12):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.AvgPool2d(2),
        )
        self.attnpool = AttentionPool2d(4, width, num_heads=4, output_dim=embed_dim)

    def forward(self, images):
        return self.attnpool(self.stem(images))


class TextEncoder(nn.Module):
    def __init__(self, vocab_size=20, context_length=6, width=16, embed_dim=12):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, width)
        self.positional_embedding = nn.Parameter(torch.empty(context_length, width))
        nn.init.normal_(self.positional_embedding, std=0.01)
        layer = nn.TransformerEncoderLayer(
            width, nhead=4, dim_feedforward=32, dropout=0.0, batch_first=True, norm_first=True
        )
        self.transformer = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.ln_final = nn.LayerNorm(width)
        self.text_projection = nn.Parameter(torch.empty(width, embed_dim))
        nn.init.normal_(self.text_projection, std=width**-0.5)

    def forward(self, text):
        x = self.token_embedding(text) + self.positional_embedding
        x = self.ln_final(self.transformer(x))
        # the features at the end-of-text token, the caption's largest id
        return x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection


class CLIP(nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = ImageEncoder()
        self.text = TextEncoder()
        self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))

    def forward(self, images, text):
        image_features = F.normalize(self.visual(images), dim=-1)
        text_features = F.normalize(self.text(text), dim=-1)
        logit_scale = self.logit_scale.exp().clamp(max=100)
        logits_per_image = logit_scale * image_features @ text_features.t()
        return logits_per_image, logits_per_image.t()


def make_pairs(rng, n_classes=6, n=48):
    """Images of a class share a colour pattern; their captions share its words, end with the
    end-of-text token (id 19) and are padded with zeros."""
    labels = rng.integers(0, n_classes, n)
    patterns = rng.standard_normal((n_classes, 3, 8, 8))
    images = patterns[labels] + 0.5 * rng.standard_normal((n, 3, 8, 8))
    text = np.zeros((n, 6), dtype=np.int64)
    for i, c in enumerate(labels):
        length = rng.integers(2, 5)
        text[i, :length] = 1 + 3 * c + rng.integers(0, 3, length)
        text[i, length] = 19
    return torch.tensor(images.astype(np.float32)), torch.tensor(text)


def build():
    return CLIP()


def train(model, epochs=3, batch_size=16):
    rng = np.random.default_rng(0)
    images, text = make_pairs(rng)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    losses = []
    for epoch in range(epochs):
        model.train()
        for start in range(0, len(images), batch_size):
            batch_images = images[start : start + batch_size]
            batch_text = text[start : start + batch_size]
            logits_per_image, logits_per_text = model(batch_images, batch_text)
            labels = torch.arange(len(batch_images), dtype=torch.long)
            loss = (
                F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)
            ) / 2
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        print(f"epoch {epoch}: loss {losses[-1]:.4f} scale {model.logit_scale.exp().item():.3f}")
    model.eval()
    with torch.no_grad():
        logits_per_image, _ = model(images[:16], text[:16])
        accuracy = (logits_per_image.argmax(dim=1) == torch.arange(16)).float().mean()
    print(f"image->text retrieval accuracy: {accuracy.item():.3f}")
    losses.append(accuracy.item())
    losses.append(model.logit_scale.item())
    return losses


if __name__ == "__main__":
    train(build())
