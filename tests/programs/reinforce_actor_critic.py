"""An advantage actor-critic (A2C) agent on a corridor written in NumPy: 16 copies of the
corridor run side by side, the agent steps left or right, earns 1 at the right end and pays 0.02
a step. Policy and value heads share a trunk; ``Categorical`` gives log-probabilities and the
entropy bonus; n-step discounted returns are computed with a Python loop, advantages are
normalized, the critic is fit with a smooth L1 loss, gradients are clipped and Adam steps.

The training actions are drawn with NumPy from the policy's probabilities, so that both
libraries see the same episodes. ``Categorical.sample`` draws from each library's own generator:
it plays only the final sampled evaluation, whose return is checked, not compared."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

LENGTH, ENVS, HORIZON, GAMMA = 6, 16, 8, 0.9
STEP_COST, GOAL_REWARD, TARGET_RETURN = 0.02, 1.0, 0.85


class Corridor:
    """Cells 0 .. LENGTH - 1, a wall on the left, the goal on the right; an episode that reaches
    the goal starts again at a random cell left of it."""

    def __init__(self, envs, rng, start=None):
        self.rng = rng
        self.position = np.full(envs, start) if start is not None else self._starts(envs)

    def _starts(self, count):
        return self.rng.integers(0, LENGTH - 1, count)

    def observe(self):
        return torch.from_numpy(np.eye(LENGTH, dtype=np.float32)[self.position])

    def step(self, actions):
        self.position = np.clip(self.position + 2 * actions - 1, 0, LENGTH - 1)
        done = self.position == LENGTH - 1
        reward = np.where(done, GOAL_REWARD, -STEP_COST).astype(np.float32)
        self.position[done] = self._starts(int(done.sum()))
        return reward, done.astype(np.float32)


class ActorCritic(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(LENGTH, hidden), nn.Tanh())
        self.policy = nn.Linear(hidden, 2)
        self.value = nn.Linear(hidden, 1)

    def forward(self, obs):
        features = self.trunk(obs)
        return Categorical(logits=self.policy(features)), self.value(features).squeeze(-1)


def build():
    return ActorCritic()


def discounted_returns(rewards, dones, bootstrap):
    """R_t = r_t + gamma * R_{t+1}, cut where an episode ended, from the critic's last value."""
    returns, running = [], bootstrap
    for reward, done in zip(reversed(rewards), reversed(dones)):
        running = torch.from_numpy(reward) + GAMMA * running * torch.from_numpy(1.0 - done)
        returns.insert(0, running)
    return torch.stack(returns)


def greedy_return(model, start=0, limit=20):
    """The return of one episode from ``start`` taking the most probable action each step."""
    env, total = Corridor(1, np.random.default_rng(0), start), 0.0
    with torch.no_grad():
        for _ in range(limit):
            dist, _ = model(env.observe())
            reward, done = env.step(dist.probs.argmax(-1).numpy())
            total += float(reward[0])
            if done[0]:
                break
    return total


def sampled_return(model, episodes=16, limit=20):
    """The mean return of ``episodes`` episodes from cell 0 with actions from ``dist.sample()``."""
    env, totals = Corridor(episodes, np.random.default_rng(1), 0), np.zeros(episodes)
    running = np.ones(episodes, dtype=bool)
    with torch.no_grad():
        for _ in range(limit):
            dist, _ = model(env.observe())
            reward, done = env.step(dist.sample().numpy())
            totals += reward * running
            running &= done == 0
    return totals.mean()


def train(model, updates=60):
    rng = np.random.default_rng(0)
    env = Corridor(ENVS, rng)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.005)
    losses = []
    for update in range(updates):
        log_probs, values, entropies, rewards, dones = [], [], [], [], []
        for _ in range(HORIZON):
            dist, value = model(env.observe())
            probs = dist.probs.detach().numpy().astype(np.float64)
            cdf = np.cumsum(probs / probs.sum(-1, keepdims=True), -1)
            actions = (cdf[:, :-1] < rng.random((ENVS, 1))).sum(-1)  # inverse CDF
            log_probs.append(dist.log_prob(torch.from_numpy(actions)))
            entropies.append(dist.entropy())
            values.append(value)
            reward, done = env.step(actions)
            rewards.append(reward)
            dones.append(done)
        with torch.no_grad():
            _, bootstrap = model(env.observe())
        returns = discounted_returns(rewards, dones, bootstrap)
        values = torch.stack(values)
        advantages = returns - values.detach()
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        policy_loss = -(torch.stack(log_probs) * advantages).mean()
        value_loss = F.smooth_l1_loss(values, returns)
        entropy = torch.stack(entropies).mean()
        loss = policy_loss + 0.5 * value_loss - 0.01 * entropy
        optimizer.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
        optimizer.step()
        losses += [policy_loss.item(), value_loss.item(), entropy.item(), norm.item()]
        if update % 20 == 0:
            print(f"update {update} loss {loss.item():.4f} entropy {entropy.item():.4f}")
    greedy = greedy_return(model)
    sampled = sampled_return(model)
    print(f"greedy return {greedy:.2f} sampled return {sampled:.2f}")
    assert greedy >= TARGET_RETURN and sampled >= TARGET_RETURN - 0.1, (greedy, sampled)
    return losses + [greedy]


if __name__ == "__main__":
    torch.manual_seed(0)
    train(build())
