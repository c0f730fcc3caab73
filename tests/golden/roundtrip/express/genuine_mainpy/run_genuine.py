"""Runs EXPRESS-Bench's main.py (HCPLab-SYSU/EXPRESS-Bench @e8789da, unmodified) with `gpt`
replaced by stub_gpt.py (the GPT-4o-mini chat call) and `src.vlm` by stub_vlm.py (the VLM model
class): habitat-sim, the TSDF planner, GOE/FBE exploration, its loop and its results.pkl writing
are upstream's. Its own fine_eqa.yaml with only the paths, the device and the step budget
changed (OVERRIDES). In the habitat-sim 0.2.2 CPU chroot (numpy 1.26.4, numpy-quaternion,
numba, scikit-image, scikit-learn, omegaconf, matplotlib):

    python run_genuine.py <EXPRESS-Bench checkout> <express-bench.json> <scenes dir> <output dir>
"""

import copyreg
import os
import runpy
import sys
from pathlib import Path

import magnum as mn
import numpy as np
from omegaconf import OmegaConf

here = Path(__file__).resolve().parent
checkout, dataset, scenes, out = (Path(a).resolve() for a in sys.argv[1:5])
OVERRIDES = {
    "dataset_path": str(dataset),
    "scene_data_path": str(scenes),
    "output_dir": str(out),
    "vlm": {"device": "cpu"},
    "max_step_room_size_ratio": 1,  # 9 steps a question in the demo apartment (3 upstream)
}
cfg = OmegaConf.merge(OmegaConf.load(checkout / "fine_eqa.yaml"), OVERRIDES)
out.mkdir(parents=True, exist_ok=True)
OmegaConf.save(cfg, out / "fine_eqa.yaml")

sys.path.insert(0, str(here))
import stub_gpt  # noqa: E402
import stub_vlm  # noqa: E402

sys.modules["gpt"] = stub_gpt  # the chat call only
sys.modules["src.vlm"] = stub_vlm  # the model class only; every other module is upstream's
# habitat-sim 0.2.2's PathFinder.snap_point returns a magnum Vector3, which its magnum bindings
# cannot pickle (main.py line 464: "TypeError: cannot pickle '_magnum.Vector3' object"); it is
# pickled exactly as the float32 numpy array of its components (the array's own reduce), the
# only change to what main.py writes.
copyreg.pickle(mn.Vector3, lambda v: np.array([v.x, v.y, v.z], dtype=np.float32).__reduce__())
os.chdir(checkout)  # its prompt and font paths are relative to the checkout
sys.path.insert(0, str(checkout))
sys.argv = ["main.py", "-cf", str(out / "fine_eqa.yaml")]
runpy.run_path(str(checkout / "main.py"), run_name="__main__")
