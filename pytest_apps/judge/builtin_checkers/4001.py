"""APPS test problem 4001 (Codeforces 1108B): restore x and y from the shuffled list of the divisors of both
(a common divisor appears twice). The pair is unique but may be printed in either order ("20 8" or "8 20").

Accepts two positive integers whose divisors, merged, are the input list.
"""


def _divisors(value):
    small = [d for d in range(1, int(value ** 0.5) + 1) if value % d == 0]
    return small + [value // d for d in reversed(small) if d * d != value]


def check(input, expected, got):
    data = input.split()
    n = int(data[0])
    wanted = sorted(int(x) for x in data[1:1 + n])
    tokens = got.split()
    if len(tokens) != 2:
        return False, f"{len(tokens)} token{'' if len(tokens) == 1 else 's'}; expected two numbers"
    try:
        x, y = int(tokens[0]), int(tokens[1])
    except ValueError:
        return False, f"{got.strip()!r} is not two integers"
    if x not in wanted or y not in wanted:  # each number is one of its own divisors
        return False, f"{x} and {y} are not both in the input list"
    merged = sorted(_divisors(x) + _divisors(y))
    if merged != wanted:
        return False, f"the divisors of {x} and {y} are not the input list"
    return True, ""
