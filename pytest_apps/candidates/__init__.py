"""Candidate programs: where they come from (`sources`: folders, generations files, reference solutions;
`origins`: which of them a run evaluates; `decoding`: a file's bytes to text as Python reads a source file), code
extraction from model text (`extract`), the agent hook that
generates programs before a run (`generation`) and the ready agent (`openai_chat`).

May import `core`, `dataset` and `executor` (an agent's `python_exec` tool runs snippets through it); knows
nothing of judging, reports or pytest.
"""
