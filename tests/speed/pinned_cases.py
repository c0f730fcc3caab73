"""The dry-run cases whose estimates are pinned across the speed work (see test_dry_run_pinned)."""

from __future__ import annotations

CASES: dict[str, tuple[str, list[str]]] = {
    # name: (demo data, overrides)
    "express-fbe-gpt4o": ("express", ["task=express", "policy=fbe", "llm=gpt-4o"]),
    "express-vlm_explore-gpt4o": ("express", ["task=express", "policy=vlm_explore", "llm=gpt-4o"]),
    "express-re-claude": ("express", ["task=express", "policy=re", "llm=claude-sonnet"]),
    "hmeqa-fbe-gpt4o": ("hmeqa", ["task=hmeqa", "policy=fbe", "llm=gpt-4o"]),
    "aeqa-vlm_explore-gpt4o": ("aeqa", ["task=aeqa", "policy=vlm_explore", "llm=gpt-4o"]),
    "openeqa-multiframe-gpt4o": ("openeqa", ["task=openeqa_em", "policy=multiframe", "llm=gpt-4o"]),
    "openeqa-blind-gemini": ("openeqa", ["task=openeqa_em", "policy=blind", "llm=gemini-flash"]),
    "openeqa-single-gpt41": ("openeqa", ["task=openeqa_em", "policy=single", "llm=gpt-4.1"]),
}
