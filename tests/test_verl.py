"""The verl reward functions inside the verl that is installed (0.9: `pip install verl`, its own torch): the
commands of docs/rewards.md composed with verl's own configuration, and every reward manager verl ships run
on real APPS rows with model programs, through verl's own code (its config loader, `load_reward_manager`, the
reward loop worker's `compute_score_batch`, the managers' `run_single` and `__call__`).

Skipped with the reason when verl (or what its reward managers import: torch, tensordict, transformers,
hydra) cannot be imported. The tokenizer is one character per token: the managers decode the response ids
with it, and the text they decode is the model text.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from conftest import shared_data_dir

from pytest_apps.rewards import CodeReward, NotScored, close_scorers, compute_score_batch

REPO = Path(__file__).resolve().parent.parent
try:
    import numpy as np
    import torch
    from hydra import compose, initialize_config_dir

    import verl
    from verl import DataProto
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
    from verl.trainer.ppo.reward import get_custom_reward_fn, load_reward_manager
    from verl.utils.reward_score import prime_code
    from verl.workers import reward_manager as legacy
except ImportError as exc:  # verl pulls torch: not among the test extras
    pytest.skip(f"verl cannot be imported here ({exc}); pip install verl", allow_module_level=True)

CONFIG = Path(verl.__file__).parent / "trainer" / "config"
OPTIONS = {"timeout": 2.0, "workers": 1}


def documented_commands() -> list[list[str]]:
    """The overrides of each `python -m verl.trainer.main_ppo` command in docs/rewards.md, as written."""
    text = (REPO / "docs" / "rewards.md").read_text()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for command in re.split(r"\n\s*\n", block):
            words = shlex.split(re.sub(r"#[^\n]*", "", command).replace("\\\n", " "))
            if words[:3] == ["python", "-m", "verl.trainer.main_ppo"]:
                commands.append([w for w in words[3:] if w != "..."])
    return commands


def verl_config(overrides: list[str]) -> Any:
    with initialize_config_dir(config_dir=str(CONFIG), version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides)


def test_the_documented_commands_compose_and_select_our_function() -> None:
    """Each documented command composes with verl's own configuration; those with a reward function select ours,
    and the one for a SandboxFusion server sets the server's URL where verl 0.9 reads it."""
    import pytest_apps.rewards as rewards

    commands = documented_commands()
    assert len(commands) >= 2
    for overrides in commands:
        config = verl_config(overrides)
        if any(o.startswith("reward.sandbox_fusion.url=") for o in overrides):
            # verl's own sandbox_fusion path, pointed at `python -m pytest_apps serve`: no function of ours
            assert str(config.reward.sandbox_fusion.url).endswith("/run_code")
            continue
        chosen = get_custom_reward_fn(config)
        assert chosen is not None, f"verl would score with its own default under {overrides}"
        name = config.reward.custom_reward_function.name
        assert chosen.args[0] is getattr(rewards, name)  # verl's loader found our very function
        assert set(chosen.args[1]) <= {"shape", "budget"} and chosen.args[1]["shape"] in rewards.SHAPES
        manager = config.reward.reward_manager.name
        from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls

        assert get_reward_manager_cls(manager) is not None


def test_the_old_top_level_keys_are_what_verl_ignores() -> None:
    """Why the commands changed: the keys of older releases still compose, and main_ppo scores without them."""
    config = verl_config(["custom_reward_function.path=pkg://pytest_apps.rewards",
                          "custom_reward_function.name=compute_score_async"])
    assert get_custom_reward_fn(config) is None


class CharTokenizer:
    """One token per character (its code point): what the managers decode is the text itself."""

    eos_token = "<|endoftext|>"  # the dapo manager strips it from the text's end

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        return "".join(chr(int(i)) for i in ids if int(i))

    def batch_decode(self, rows: Any, skip_special_tokens: bool = True) -> list[str]:
        return [self.decode(row) for row in rows]


def rows_and_programs() -> tuple[list[str], list[str]]:
    """Model programs (passing, partly passing, failing) on real APPS rows with few tests."""
    folder = shared_data_dir()
    if not (folder / "candidates.jsonl").is_file():
        pytest.skip(f"no shared APPS data at {folder} (set APPS_SHARED_DATA to the apps-data folder)")
    rows = {r["problem_id"]: r for r in map(json.loads, (folder / "apps_test_rows.jsonl").read_text().splitlines())}
    texts, truths = [], []
    for line in (folder / "candidates.jsonl").read_text().splitlines():
        candidate = json.loads(line)
        if candidate["problem_id"] in (3040, 4559, 4655) and len(texts) < 8:
            texts.append(f"Here it is:\n```python\n{candidate['code']}\n```\n")
            truths.append(rows[candidate["problem_id"]]["input_output"])
    return texts, truths


def data_of(texts: list[str], truths: list[Any]) -> Any:
    """A verl batch as its rollout leaves it: prompt and response ids, the mask, the rows' reward_model."""
    width = max(len(t) for t in texts)
    prompts = torch.full((len(texts), 3), ord("?"), dtype=torch.long)
    responses = torch.zeros((len(texts), width), dtype=torch.long)
    for i, text in enumerate(texts):
        responses[i, :len(text)] = torch.tensor([ord(c) for c in text])
    mask = torch.cat([torch.ones_like(prompts), (responses != 0).long()], dim=1)
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": mask},
        non_tensors={"data_source": np.array(["apps"] * len(texts), dtype=object),
                     "reward_model": np.array([{"ground_truth": t} for t in truths], dtype=object),
                     "extra_info": np.array([{"index": i} for i in range(len(texts))], dtype=object)})


def expected(texts: list[str], truths: list[str], shape: str) -> list[float | None]:
    with CodeReward(shape, **OPTIONS) as reward:
        return reward(completions=texts, input_output=truths)


_ACTOR_LOOP: list[asyncio.AbstractEventLoop] = []


def actor_loop() -> asyncio.AbstractEventLoop:
    """The event loop of this process's reward-loop worker (made once, made again only if something closed it)."""
    if not _ACTOR_LOOP or _ACTOR_LOOP[0].is_closed():
        _ACTOR_LOOP[:] = [asyncio.new_event_loop()]
    return _ACTOR_LOOP[0]


def loop_scores(config: Any, data: Any) -> tuple[list[float], dict[str, Any]]:
    """A reward-loop worker's batch (`RewardLoopWorker.compute_score_batch`: each completion's `run_single`,
    gathered), assembled as `RewardLoopManager.compute_rm_score` does: the extra keys of the first completion
    taken from every other. The worker is a Ray actor in verl, one event loop for its process's life (the
    `rate_limited` manager's class-wide limits bind to it): so here, whatever an earlier test left current."""
    asyncio.set_event_loop(actor_loop())
    worker = RewardLoopWorker.__new__(RewardLoopWorker)  # its __init__ loads a tokenizer from a model path
    worker.config, worker.reward_router_address = config, None
    worker.reward_manager = load_reward_manager(config, CharTokenizer())
    worker.loop = worker.reward_manager.loop
    outputs = worker.loop.run_until_complete(worker.compute_score_batch(data))
    infos = [output.get("reward_extra_info", {}) for output in outputs]
    extra = {key: np.array([info[key] for info in infos]) for key in infos[0]}
    type(worker.reward_manager).assemble_rm_scores(data, [o["reward_score"] for o in outputs])
    return [float(o["reward_score"]) for o in outputs], extra


@pytest.mark.parametrize("manager", ["naive", "dapo", "gdpo", "rate_limited"])
@pytest.mark.parametrize("function", ["compute_score_async", "compute_score"])
def test_every_reward_loop_manager_scores_real_rows_as_a_direct_call_and_stops_on_not_scored(
        manager: str, function: str) -> None:
    texts, truths = rows_and_programs()
    overrides = [f"reward.reward_manager.name={manager}",
                 "reward.custom_reward_function.path=pkg://pytest_apps.rewards",
                 f"reward.custom_reward_function.name={function}",
                 "+reward.custom_reward_function.reward_kwargs.shape=fraction",
                 *(f"+reward.custom_reward_function.reward_kwargs.{k}={v}" for k, v in OPTIONS.items())]
    config = verl_config(overrides)
    try:
        scores, extra = loop_scores(config, data_of(texts, truths))
        want = expected(texts, truths, "fraction")
        assert scores == want and 0.0 < sum(want) < len(want)  # some pass, some do not
        assert list(extra["score"]) == want and list(extra["tests_total"]) == [len(json.loads(t)["inputs"]) for t in truths]
        # one row without usable tests among scored ones: no made-up 0.0 and no KeyError, the step stops
        with pytest.raises(NotScored, match="not valid JSON"):
            loop_scores(config, data_of(texts[:2] + texts[:1], truths[:2] + ['{"inputs": [1, 2'] ))
    finally:
        close_scorers()


def legacy_scores(manager: Any, data: Any) -> list[float]:
    out = manager(data, return_dict=True)
    rewards = out["reward_tensor"] if isinstance(out, dict) else out
    prompt = data.batch["prompts"].shape[-1]
    ends = data.batch["attention_mask"][:, prompt:].sum(dim=-1) - 1
    return [float(rewards[i, int(end)]) for i, end in enumerate(ends)]


def test_every_legacy_manager_class_takes_our_results_and_stops_on_not_scored() -> None:
    texts, truths = rows_and_programs()
    kwargs = {"shape": "continuous", **OPTIONS}
    bad = data_of(texts[:2], [truths[0], '{"inputs": [1, 2'])
    make = {
        "naive": lambda: legacy.NaiveRewardManager(CharTokenizer(), 0, compute_score=get_custom_reward_fn(config)),
        "dapo": lambda: legacy.DAPORewardManager(CharTokenizer(), 0, compute_score=get_custom_reward_fn(config)),
        "batch": lambda: legacy.BatchRewardManager(CharTokenizer(), 0, compute_score=compute_score_batch, **kwargs),
        # prime scores in a process pool of its own, forked per batch
        "prime": lambda: legacy.PrimeRewardManager(CharTokenizer(), 0, compute_score=get_custom_reward_fn(config)),
    }
    config = verl_config(["reward.custom_reward_function.path=pkg://pytest_apps.rewards",
                          "reward.custom_reward_function.name=compute_score",
                          *(f"+reward.custom_reward_function.reward_kwargs.{k}={v}" for k, v in kwargs.items())])
    want = expected(texts, truths, "continuous")
    try:
        for name, manager in make.items():
            assert legacy_scores(manager(), data_of(texts, truths)) == pytest.approx(want, rel=1e-6), name  # float32
            with pytest.raises(NotScored):
                legacy_scores(manager(), bad)
    finally:
        close_scorers()


def test_the_continuous_shape_is_verls_prime_code_on_real_rows() -> None:
    texts, truths = rows_and_programs()
    ours = expected(texts, truths, "continuous")
    theirs = [float(prime_code.compute_score(text, truth, continuous=True)[0]) for text, truth in zip(texts, truths)]
    assert ours == theirs and len(set(ours)) > 2  # several partial scores, every one verl's


def test_a_forked_child_starts_its_own_scorer() -> None:
    """verl's prime manager forks its pool per batch: the child must not drive the parent's executors."""
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    texts, truths = rows_and_programs()
    score = partial(compute_score_batch, ["apps"], [texts[0]], [truths[0]], **OPTIONS)
    try:
        here = score()[0]["score"]
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
            there = pool.submit(score).result(timeout=120)[0]
        assert there["score"] == here and there[0] == here  # item 0 is the score, as prime reads it
        assert score()[0]["score"] == here  # the parent's executors still answer
    finally:
        close_scorers()


def test_the_remote_manager_scores_in_ray_actors_of_its_own_as_a_direct_call() -> None:
    """verl's `remote` reward-loop manager sends each completion to one of `reward.num_workers` Ray actors of its
    own (`RewardComputeWorker`, one CPU each), which call the function it was given: our sync entry point, pickled
    by reference, scores there as a direct call does, and a row without usable tests reaches the trainer as
    `NotScored` (inside Ray's task error), never as a 0."""
    ray = pytest.importorskip("ray")
    texts, truths = rows_and_programs()
    config = verl_config(["reward.reward_manager.name=remote", "reward.num_workers=2",
                          "reward.custom_reward_function.path=pkg://pytest_apps.rewards",
                          "reward.custom_reward_function.name=compute_score",
                          "+reward.custom_reward_function.reward_kwargs.shape=fraction",
                          *(f"+reward.custom_reward_function.reward_kwargs.{k}={v}" for k, v in OPTIONS.items())])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    try:
        scores, extra = loop_scores(config, data_of(texts, truths))
        want = expected(texts, truths, "fraction")
        assert scores == want and 0.0 < sum(want) < len(want)
        assert list(extra["tests_total"]) == [len(json.loads(t)["inputs"]) for t in truths]
        with pytest.raises(NotScored, match="not valid JSON"):
            loop_scores(config, data_of(texts[:2], truths[:1] + ['{"inputs": [1, 2']))
    finally:
        ray.shutdown()
        close_scorers()
