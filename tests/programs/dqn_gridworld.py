"""A Deep Q-Network on a 4x4 gridworld written in NumPy: the agent starts in a corner, the goal is
in the opposite one, a pit sits on the way; it pays 0.05 a step, earns 1 at the goal and loses 1
in the pit. Transitions go into a replay buffer (a ``deque``); minibatches train the online
network on the Huber loss against a target network (a ``copy.deepcopy`` refreshed with
``load_state_dict`` every few updates), with ``gather`` picking the taken actions' values,
``max(1).values`` the next states' best, gradients clipped by value, and Adam.

Every random choice (exploration, the replay minibatches) comes from a seeded NumPy ``Generator``,
so that both libraries play the same episodes and replay the same transitions."""

import copy
from collections import deque

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SIZE, START, GOAL, PIT = 4, 0, 15, 10
MOVES = [(-1, 0), (1, 0), (0, -1), (0, 1)]  # up, down, left, right
STEP_COST, MAX_STEPS, GAMMA = 0.05, 16, 0.9
BATCH, WARMUP, SYNC_EVERY = 32, 64, 20


class GridWorld:
    def reset(self):
        self.cell, self.steps = START, 0
        return self.cell

    def step(self, action):
        """Moves one cell (walls stop the agent); returns (next cell, reward, done)."""
        row, col = divmod(self.cell, SIZE)
        d_row, d_col = MOVES[action]
        row, col = min(max(row + d_row, 0), SIZE - 1), min(max(col + d_col, 0), SIZE - 1)
        self.cell, self.steps = row * SIZE + col, self.steps + 1
        if self.cell == GOAL:
            return self.cell, 1.0, True
        if self.cell == PIT:
            return self.cell, -1.0, True
        return self.cell, -STEP_COST, self.steps >= MAX_STEPS


def one_hot(cells):
    return torch.from_numpy(np.eye(SIZE * SIZE, dtype=np.float32)[cells])


class QNetwork(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(SIZE * SIZE, hidden), nn.ReLU(), nn.Linear(hidden, len(MOVES))
        )

    def forward(self, state):
        return self.net(state)


def build():
    return QNetwork()


def best_move(model, cell):
    with torch.no_grad():
        return int(model(one_hot([cell])).argmax(1).item())


def act(model, cell, epsilon, rng):
    """Epsilon-greedy: a random move with probability epsilon, else the best one."""
    if rng.random() < epsilon:
        return int(rng.integers(len(MOVES)))
    return best_move(model, cell)


def dqn_loss(model, target_model, batch):
    states, actions, rewards, next_states, dones = (np.array(column) for column in zip(*batch))
    q = model(one_hot(states)).gather(1, torch.from_numpy(actions).unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        best_next = target_model(one_hot(next_states)).max(1).values
        not_done = torch.from_numpy(1.0 - dones.astype(np.float32))
        target = torch.from_numpy(rewards.astype(np.float32)) + GAMMA * best_next * not_done
    return F.smooth_l1_loss(q, target)


def greedy_episode(model):
    """The return of one episode that always takes the best move."""
    env, total, done = GridWorld(), 0.0, False
    cell = env.reset()
    while not done:
        cell, reward, done = env.step(best_move(model, cell))
        total += reward
    return total


def train(model, episodes=80):
    rng = np.random.default_rng(0)
    target_model = copy.deepcopy(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.005)
    replay = deque(maxlen=1000)
    env, losses, updates = GridWorld(), [], 0
    for episode in range(episodes):
        epsilon = max(0.1, 1.0 - episode / 50)
        cell, done, total = env.reset(), False, 0.0
        while not done:
            action = act(model, cell, epsilon, rng)
            next_cell, reward, done = env.step(action)
            replay.append((cell, action, reward, next_cell, done))
            cell, total = next_cell, total + reward
            if len(replay) < WARMUP:
                continue
            batch = [replay[i] for i in rng.choice(len(replay), BATCH, replace=False)]
            loss = dqn_loss(model, target_model, batch)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_value_(model.parameters(), clip_value=1.0)
            optimizer.step()
            updates += 1
            if updates % SYNC_EVERY == 0:
                target_model.load_state_dict(model.state_dict())
            losses.append(loss.item())
        if episode % 20 == 0:
            print(f"episode {episode} return {total:.2f} epsilon {epsilon:.2f}")
    greedy = greedy_episode(model)
    print(f"{updates} updates, greedy return {greedy:.2f}")
    # the shortest path (six moves, around the pit) returns 1 - 5 * STEP_COST
    assert greedy >= 1 - 5 * STEP_COST - 1e-6, greedy
    return losses + [greedy]


if __name__ == "__main__":
    torch.manual_seed(0)
    train(build())
