"""pytorch/examples' reinforce.py and actor_critic.py, one episode at a time: a policy network
with an affine layer and dropout (in eval mode here: its masks differ between libraries), the
state turned into a batch of one with ``torch.from_numpy(state).float().unsqueeze(0)``,
``Categorical(probs)`` and ``m.log_prob(action)`` kept in lists on the model, returns built
backwards in a ``collections.deque`` and normalized with ``(returns - returns.mean()) /
(returns.std() + eps)`` where ``eps = np.finfo(np.float32).eps.item()``, the REINFORCE loss
``torch.cat(policy_loss).sum()``, and for the actor-critic a ``SavedAction`` namedtuple,
``F.smooth_l1_loss(value, torch.tensor([R]))`` and ``torch.stack(...).sum()`` of both losses;
``del model.rewards[:]`` after each update. The environment is a corridor in NumPy, and the
actions are drawn by NumPy from the policy's probabilities so that both libraries see the same
episodes."""

from collections import deque, namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

eps = np.finfo(np.float32).eps.item()
SavedAction = namedtuple("SavedAction", ["log_prob", "value"])
LENGTH, GAMMA = 6, 0.9


class Corridor:
    def reset(self):
        self.position = 2
        return np.eye(LENGTH)[self.position]

    def step(self, action):
        self.position = min(max(self.position + 2 * action - 1, 0), LENGTH - 1)
        done = self.position == LENGTH - 1
        return np.eye(LENGTH)[self.position], 1.0 if done else -0.1, done


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(LENGTH, 16)
        self.dropout = nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(16, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.dropout(self.affine1(x)))
        return F.softmax(self.affine2(x), dim=1)


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(LENGTH, 16)
        self.action_head = nn.Linear(16, 2)
        self.value_head = nn.Linear(16, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_prob = F.softmax(self.action_head(x), dim=-1)
        return action_prob, self.value_head(x)


class Agents(nn.Module):
    def __init__(self):
        super().__init__()
        self.policy = Policy()
        self.actor_critic = ActorCritic()


def build():
    return Agents()


def discounted(rewards):
    R, returns = 0, deque()
    for r in rewards[::-1]:
        R = r + GAMMA * R
        returns.appendleft(R)
    return returns


def reinforce_episode(policy, optimizer, rng):
    env = Corridor()
    state = env.reset()
    for _ in range(12):
        state = torch.from_numpy(state).float().unsqueeze(0)
        probs = policy(state)
        m = Categorical(probs)
        action = torch.tensor([int(rng.random() < probs[0, 1].item())])
        policy.saved_log_probs.append(m.log_prob(action))
        state, reward, done = env.step(action.item())
        policy.rewards.append(reward)
        if done:
            break
    returns = torch.tensor(discounted(policy.rewards))
    returns = (returns - returns.mean()) / (returns.std() + eps)
    policy_loss = []
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    loss = torch.cat(policy_loss).sum()
    loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]
    return loss.item()


def actor_critic_episode(model, optimizer, rng):
    env = Corridor()
    state = env.reset()
    for _ in range(12):
        probs, state_value = model(torch.from_numpy(state).float())
        m = Categorical(probs)
        action = torch.tensor(int(rng.random() < probs[1].item()))
        model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
        state, reward, done = env.step(action.item())
        model.rewards.append(reward)
        if done:
            break
    returns = torch.tensor(list(discounted(model.rewards)))
    returns = (returns - returns.mean()) / (returns.std() + eps)
    policy_losses, value_losses = [], []
    for (log_prob, value), R in zip(model.saved_actions, returns):
        advantage = R - value.item()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
    optimizer.zero_grad()
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
    loss.backward()
    optimizer.step()
    del model.rewards[:]
    del model.saved_actions[:]
    return loss.item()


def train(agents, episodes=6):
    losses = []
    agents.policy.eval()
    optimizer = optim.Adam(agents.policy.parameters(), lr=1e-2)
    rng = np.random.default_rng(5)
    for i_episode in range(episodes):
        losses.append(reinforce_episode(agents.policy, optimizer, rng))
        if i_episode % 3 == 0:
            print(f"Episode {i_episode}\tLast loss: {losses[-1]:.2f}")
    optimizer = optim.Adam(agents.actor_critic.parameters(), lr=3e-2)
    for i_episode in range(episodes):
        losses.append(actor_critic_episode(agents.actor_critic, optimizer, rng))
        if i_episode % 3 == 0:
            print(f"Episode {i_episode}\tLast loss: {losses[-1]:.2f}")
    return losses


if __name__ == "__main__":
    train(build())
