"""A single-level anchor-based detector head, as SSD/RetinaNet-style tutorials write one: a small
conv backbone predicts, at each cell of an 8 x 8 feature map and for 3 anchor shapes, an
objectness logit and 4 box deltas. Anchors are matched to ground-truth boxes by IoU (positives
above 0.5, negatives below 0.4, the rest ignored), boxes are encoded as (dx, dy, log dw, log dh)
offsets, objectness is trained with ``binary_cross_entropy_with_logits`` and a ``pos_weight``
for the rare positives, and boxes with ``smooth_l1_loss`` on the positives only. At the end the
predictions are decoded, clamped to the image and filtered by a hand-written greedy NMS built on
``argsort`` and masks. Images are random noise with brighter squares where the boxes are."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

IMAGE, GRID = 32, 8
ANCHOR_SIZES = [(6.0, 6.0), (10.0, 6.0), (6.0, 10.0)]


def make_anchors():
    """(GRID * GRID * 3, 4) anchors as (x1, y1, x2, y2), centred on each cell."""
    stride = IMAGE / GRID
    centres = (torch.arange(GRID, dtype=torch.float32) + 0.5) * stride
    cy, cx = torch.meshgrid(centres, centres, indexing="ij")
    sizes = torch.tensor(ANCHOR_SIZES)
    cx = cx.reshape(-1, 1).expand(-1, len(ANCHOR_SIZES))
    cy = cy.reshape(-1, 1).expand(-1, len(ANCHOR_SIZES))
    w, h = sizes[:, 0], sizes[:, 1]
    return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=-1).reshape(-1, 4)


def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(a, b):
    """(N, M) intersection over union of two sets of (x1, y1, x2, y2) boxes."""
    top_left = torch.max(a[:, None, :2], b[None, :, :2])
    bottom_right = torch.min(a[:, None, 2:], b[None, :, 2:])
    wh = (bottom_right - top_left).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (box_area(a)[:, None] + box_area(b)[None, :] - inter)


def to_centre(boxes):
    wh = boxes[..., 2:] - boxes[..., :2]
    return boxes[..., :2] + 0.5 * wh, wh


def encode(gt, anchors):
    (gc, gwh), (ac, awh) = to_centre(gt), to_centre(anchors)
    return torch.cat([(gc - ac) / awh, torch.log(gwh / awh)], dim=-1)


def decode(deltas, anchors):
    ac, awh = to_centre(anchors)
    centre = ac + deltas[..., :2] * awh
    wh = awh * torch.exp(deltas[..., 2:].clamp(max=4.0))
    return torch.cat([centre - wh / 2, centre + wh / 2], dim=-1)


def match(anchors, gt_boxes):
    """Per anchor: 1 (object), 0 (background) or -1 (ignored), and the box it is matched to."""
    iou = box_iou(anchors, gt_boxes)
    best_iou, best_gt = iou.max(dim=1)
    labels = torch.where(best_iou >= 0.5, 1.0, torch.where(best_iou < 0.4, 0.0, -1.0))
    labels[iou.argmax(dim=0)] = 1.0  # every box gets at least its best anchor
    return labels, gt_boxes[best_gt]


def nms(boxes, scores, threshold=0.3):
    """Greedy non-maximum suppression: the indices kept, highest score first."""
    order = torch.argsort(scores, descending=True)
    suppressed = torch.zeros(len(boxes), dtype=torch.bool)
    iou = box_iou(boxes, boxes)
    keep = []
    for i in order.tolist():
        if suppressed[i]:
            continue
        keep.append(i)
        suppressed |= iou[i] > threshold
    return torch.tensor(keep, dtype=torch.long)


class Detector(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(width, width, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.objectness = nn.Conv2d(width, len(ANCHOR_SIZES), 1)
        self.regression = nn.Conv2d(width, 4 * len(ANCHOR_SIZES), 1)

    def forward(self, images):
        features = self.backbone(images)
        n = images.shape[0]
        logits = self.objectness(features).permute(0, 2, 3, 1).reshape(n, -1)
        deltas = self.regression(features).permute(0, 2, 3, 1).reshape(n, -1, 4)
        return logits, deltas


def make_data(rng, count=8):
    images = rng.normal(0.0, 0.3, (count, 1, IMAGE, IMAGE)).astype(np.float32)
    boxes = []
    for image in images:
        xy = rng.uniform(2, IMAGE - 12, size=(2, 2))
        wh = rng.uniform(5, 10, size=(2, 2))
        image_boxes = np.concatenate([xy, xy + wh], axis=1).astype(np.float32)
        for x1, y1, x2, y2 in image_boxes.round().astype(int):
            image[0, y1:y2, x1:x2] += 1.0
        boxes.append(image_boxes)
    return torch.tensor(images), [torch.tensor(b) for b in boxes]


def build():
    return Detector()


def train(model, steps=6):
    rng = np.random.default_rng(0)
    images, gt = make_data(rng)
    anchors = make_anchors()
    matches = [match(anchors, boxes) for boxes in gt]
    labels = torch.stack([m[0] for m in matches])
    targets = torch.stack([encode(m[1], anchors) for m in matches])
    positive, valid = labels == 1, labels >= 0
    pos_weight = (valid.sum() - positive.sum()) / positive.sum()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        logits, deltas = model(images)
        cls_loss = F.binary_cross_entropy_with_logits(
            logits[valid], labels[valid], pos_weight=pos_weight
        )
        box_loss = F.smooth_l1_loss(deltas[positive], targets[positive], beta=1 / 9)
        huber = F.huber_loss(deltas[positive], targets[positive], delta=0.5)
        loss = cls_loss + box_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [cls_loss.item(), box_loss.item(), huber.item()]
        print(f"step {step}: cls {cls_loss.item():.4f} box {box_loss.item():.4f}")
    model.eval()
    with torch.no_grad():
        logits, deltas = model(images[:2])
        for scores, d in zip(torch.sigmoid(logits), deltas):
            boxes = decode(d, anchors).clamp(0, IMAGE)
            top = torch.topk(scores, 10).indices
            kept = nms(boxes[top], scores[top])
            losses += [len(kept), scores[top][kept].sum().item(), boxes[top][kept].sum().item()]
            print(f"kept {len(kept)} boxes")
    return losses


if __name__ == "__main__":
    train(build())
