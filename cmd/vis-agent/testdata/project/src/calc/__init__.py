"""A small project whose tests an agent runs in a session."""


def add(a, b):
    return a + b


def mean(values):
    values = list(values)
    return sum(values) / len(values)
