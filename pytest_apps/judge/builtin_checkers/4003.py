"""APPS test problem 4003 (Codeforces 1157C2): take the leftmost or rightmost element each move so that the
written-down sequence is strictly increasing and as long as possible; print its length k, then k moves, each
'L' or 'R'. "If there are multiple answers, you can print any": when both ends hold the same value, either move
can lead to an optimal answer, and the stored output is only one of them.

Accepts an answer whose length is the stored (optimal) one and whose moves, replayed on the input, write down a
strictly increasing sequence.
"""


def check(input, expected, got):
    data = input.split()
    n = int(data[0])
    a = [int(x) for x in data[1:1 + n]]
    best = int(expected.split()[0])
    tokens = got.split()
    if not tokens:
        return False, "no output"
    if len(tokens) > 2:
        return False, f"{len(tokens)} tokens; expected the length and the moves"
    try:
        k = int(tokens[0])
    except ValueError:
        return False, f"the length {tokens[0]!r} is not a number"
    if k != best:
        return False, f"length {k}; the longest is {best}"
    moves = tokens[1] if len(tokens) == 2 else ""
    if len(moves) != k:
        return False, f"{len(moves)} move{'' if len(moves) == 1 else 's'} for a length of {k}"
    left, right = 0, n - 1
    last = None
    for step, move in enumerate(moves, start=1):
        if move == "L":
            value, left = a[left], left + 1
        elif move == "R":
            value, right = a[right], right - 1
        else:
            return False, f"move {step} is {move!r}, neither 'L' nor 'R'"
        if last is not None and value <= last:
            return False, f"move {step} writes {value} after {last}: not strictly increasing"
        last = value
    return True, ""
