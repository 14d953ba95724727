"""Proximal policy optimization (PPO) on a small CartPole written in NumPy: 8 carts run side by
side, the agent pushes left or right, earns 1 a step while the pole stays up and the cart on the
track, and the episode starts again from a small random state when it falls. An actor-critic with
a shared trunk gives a ``Categorical`` over the two pushes and a value; a rollout buffer is filled,
generalized advantage estimation (GAE) runs backwards over it with tensors, advantages are
normalized, and several epochs of shuffled minibatches optimize the clipped surrogate objective
with a smooth L1 value loss and an entropy bonus, clipped gradients and Adam (``eps=1e-5``).

The rollout actions are drawn with NumPy from the policy's probabilities, and minibatches are
shuffled with a NumPy permutation in place of ``torch.randperm``, so that both libraries see the
same episodes and the same minibatches."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

ENVS, STEPS, EPOCHS, MINIBATCH = 8, 32, 4, 64
GAMMA, LAMBDA, CLIP, VALUE_COEF, ENTROPY_COEF = 0.99, 0.95, 0.2, 0.5, 0.01
GRAVITY, CART_MASS, POLE_MASS, HALF_POLE, FORCE, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
THETA_LIMIT, X_LIMIT = 12 * 2 * np.pi / 360, 2.4


class CartPoles:
    """``count`` CartPoles stepped together with the Euler update of the classic-control task."""

    def __init__(self, count, rng):
        self.rng = rng
        self.state = self._resets(count)

    def _resets(self, count):
        return self.rng.uniform(-0.05, 0.05, (count, 4))

    def observe(self):
        return torch.from_numpy(self.state.astype(np.float32))

    def step(self, actions):
        x, x_dot, theta, theta_dot = self.state.T
        force = np.where(actions == 1, FORCE, -FORCE)
        cos, sin = np.cos(theta), np.sin(theta)
        total = CART_MASS + POLE_MASS
        temp = (force + POLE_MASS * HALF_POLE * theta_dot**2 * sin) / total
        theta_acc = (GRAVITY * sin - cos * temp) / (
            HALF_POLE * (4.0 / 3.0 - POLE_MASS * cos**2 / total)
        )
        x_acc = temp - POLE_MASS * HALF_POLE * theta_acc * cos / total
        self.state = np.stack(
            [
                x + TAU * x_dot,
                x_dot + TAU * x_acc,
                theta + TAU * theta_dot,
                theta_dot + TAU * theta_acc,
            ],
            axis=1,
        )
        done = (np.abs(self.state[:, 0]) > X_LIMIT) | (np.abs(self.state[:, 2]) > THETA_LIMIT)
        self.state[done] = self._resets(int(done.sum()))
        return np.ones(len(actions), dtype=np.float32), done.astype(np.float32)


class ActorCritic(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh()
        )
        self.actor = nn.Linear(hidden, 2)
        self.critic = nn.Linear(hidden, 1)

    def forward(self, obs):
        features = self.trunk(obs)
        return self.actor(features), self.critic(features).squeeze(-1)

    def evaluate(self, obs, actions):
        logits, value = self(obs)
        dist = Categorical(logits=logits)
        return dist.log_prob(actions), dist.entropy(), value


def build():
    return ActorCritic()


def gae(rewards, values, dones, next_value):
    """A_t = delta_t + gamma * lambda * A_{t+1}, with delta_t = r_t + gamma * V_{t+1} - V_t, cut
    where an episode ended."""
    advantages = torch.zeros_like(rewards)
    last = torch.zeros(rewards.shape[1])
    for t in reversed(range(rewards.shape[0])):
        following = next_value if t == rewards.shape[0] - 1 else values[t + 1]
        not_done = 1.0 - dones[t]
        delta = rewards[t] + GAMMA * following * not_done - values[t]
        last = delta + GAMMA * LAMBDA * not_done * last
        advantages[t] = last
    return advantages, advantages + values


def collect(model, env, rng):
    obs = torch.zeros(STEPS, ENVS, 4)
    actions = torch.zeros(STEPS, ENVS, dtype=torch.long)
    log_probs, values = torch.zeros(STEPS, ENVS), torch.zeros(STEPS, ENVS)
    rewards, dones = torch.zeros(STEPS, ENVS), torch.zeros(STEPS, ENVS)
    with torch.no_grad():
        for t in range(STEPS):
            obs[t] = env.observe()
            logits, values[t] = model(obs[t])
            dist = Categorical(logits=logits)
            probs = dist.probs.detach().numpy().astype(np.float64)
            cdf = np.cumsum(probs / probs.sum(-1, keepdims=True), -1)
            action = torch.from_numpy((cdf[:, :-1] < rng.random((ENVS, 1))).sum(-1))
            actions[t] = action
            log_probs[t] = dist.log_prob(action)
            reward, done = env.step(action.numpy())
            rewards[t] = torch.from_numpy(reward)
            dones[t] = torch.tensor(done)
        _, next_value = model(env.observe())
    advantages, returns = gae(rewards, values, dones, next_value)
    return obs, actions, log_probs, advantages, returns, rewards.sum() / dones.sum().clamp(min=1)


def ppo_update(model, optimizer, batch, rng):
    obs, actions, old_log_probs, advantages, returns = (x.flatten(0, 1) for x in batch)
    losses = []
    for _ in range(EPOCHS):
        order = torch.from_numpy(rng.permutation(len(obs)))
        for start in range(0, len(obs), MINIBATCH):
            idx = order[start : start + MINIBATCH]
            log_prob, entropy, value = model.evaluate(obs[idx], actions[idx])
            adv = advantages[idx]
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            ratio = torch.exp(log_prob - old_log_probs[idx])
            surrogate = torch.min(ratio * adv, torch.clamp(ratio, 1 - CLIP, 1 + CLIP) * adv)
            policy_loss = -surrogate.mean()
            value_loss = F.smooth_l1_loss(value, returns[idx])
            loss = policy_loss + VALUE_COEF * value_loss - ENTROPY_COEF * entropy.mean()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            with torch.no_grad():
                clipped = ((ratio - 1).abs() > CLIP).float().mean()
                approx_kl = ((ratio - 1) - ratio.log()).mean()
        losses += [policy_loss.item(), value_loss.item(), clipped.item(), approx_kl.item()]
    return losses


def train(model, iterations=6):
    rng = np.random.default_rng(0)
    env = CartPoles(ENVS, rng)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, eps=1e-5)
    losses = []
    for iteration in range(iterations):
        *batch, episode_length = collect(model, env, rng)
        losses += ppo_update(model, optimizer, batch, rng) + [episode_length.item()]
        print(f"iteration {iteration} mean episode length {episode_length.item():.1f}")
    return losses


if __name__ == "__main__":
    torch.manual_seed(0)
    train(build())
