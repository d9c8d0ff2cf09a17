#!/usr/bin/env bash
# One accelerator call's prepared work, run from the repository root on a lent GPU machine (the `device` tool's
# `run`), where nothing can be installed from outside: the packages the image lacks travel as wheels in .whl/
# (`pip download --no-deps ... -d .whl mctx==0.0.71`, see /work/.library/device/README.md; carry [".whl"]).
#
#   bash experiments/tools/accelerator_call.sh sweep     # gpu_sweep.py: the preset against "old" and "short", 1 min each
#   bash experiments/tools/accelerator_call.sh preset    # the issue's bar: the GPU preset for 300 s, then judged
#   bash experiments/tools/accelerator_call.sh breakdown # where self-play's time goes at the preset's shape (2 minutes)
#
# Everything a step writes goes to $OUT (what comes back from the call; runs/device-out elsewhere),
# its log too, so that a step cut short by the call's limit still returns what it printed; the preset step's
# network too ($OUT/agent: 8 files in all, the most a call brings back). On a CPU the same
# steps run at tiny sizes with MINUTES / SWEEP_ARGS, SECONDS_BUDGET / TRAIN_ARGS / EVAL_ARGS and BREAKDOWN_ARGS.
set -u -o pipefail
step=${1:?"which step: sweep, preset or breakdown"}
OUT=${OUT:-runs/device-out}
RUNS=${RUNS:-/tmp/azjax-runs}
mkdir -p "$OUT" "$RUNS"
export PYTHONUNBUFFERED=1
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c "import mctx" 2>/dev/null; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
"$PYTHON" -c "import jax, flax, optax, mctx, chex; print('jax', jax.__version__, 'flax', flax.__version__, \
'optax', optax.__version__, 'mctx', mctx.__version__, 'chex', chex.__version__, jax.devices())" || exit 1

case "$step" in
sweep)
    # shellcheck disable=SC2086  # SWEEP_ARGS is a list of arguments
    "$PYTHON" experiments/studies/gpu_sweep/gpu_sweep.py --game connect_four --variants "${VARIANTS:-preset,old,short}" \
        --minutes "${MINUTES:-1}" --games "${GAMES:-100}" --runs-dir "$RUNS/sweep-$(date +%H%M%S)" \
        --results-dir "$OUT" ${SWEEP_ARGS:-} 2>&1 | tee "$OUT/sweep.log"
    ;;
preset)
    run="$RUNS/preset-$(date +%H%M%S)"
    # shellcheck disable=SC2086
    "$PYTHON" -m azjax.cli train --game connect_four --preset gpu --seconds "${SECONDS_BUDGET:-300}" --out "$run" \
        --no-progress --eval-every 0 ${TRAIN_ARGS:-} 2>&1 | tee "$OUT/train.log"
    cp "$run/metrics.jsonl" "$OUT/metrics.jsonl"
    # The trained network comes back too (the machine is bare next time): as a shipped agent's three files, which
    # `azjax eval`, `azjax play` and `azjax train --init-from` take as a directory.
    "$PYTHON" - "$run" "$OUT/agent" "$(dirname "$0")" <<'AGENT' || exit 1
import sys
from pathlib import Path

import jax

sys.path.insert(0, sys.argv[3])  # experiments/tools/, this script's folder, where pretrain.py is
from pretrain import package_run  # noqa: E402

device = jax.devices()[0]
package_run(Path(sys.argv[1]), Path(sys.argv[2]), {
    "command": "azjax train --game connect_four --preset gpu (experiments/tools/accelerator_call.sh preset)",
    "machine": f"{device.platform} {device.device_kind}"})
AGENT
    # shellcheck disable=SC2086
    "$PYTHON" -m azjax.cli eval --positions "greedy:$run" "$run" --game connect_four --json "$OUT/positions.json" \
        ${EVAL_ARGS:-} 2>&1 | tee "$OUT/eval.log"
    "$PYTHON" - "$run" <<'EOF' 2>&1 | tee -a "$OUT/eval.log"
import sys

import jax

import azjax

agent = azjax.load_agent(sys.argv[1])
states = jax.vmap(agent.game.init)(jax.random.split(jax.random.key(0), 1))
for search in (False, True):
    move = agent.game.action_to_string(int(agent.act(jax.random.key(0), states, search=search)[0]))
    print(f"empty board: the {'search' if search else 'network'} plays {move} (d, the centre, is the only winning move)")
EOF
    # The 5-minute GPU agent against the shipped CPU agent (43 minutes on 2 cores), both searching 32 simulations.
    # shellcheck disable=SC2086
    "$PYTHON" -m azjax.cli eval "$run" pretrained:connect_four --game connect_four --games "${GAMES:-200}" \
        --opening-moves 4 --simulations 32 --json "$OUT/vs_cpu_agent.json" ${EVAL_ARGS:-} 2>&1 | tee -a "$OUT/eval.log"
    ;;
breakdown)
    # Issue 41's "where does the other 76% of the FLOP bound go": self-play against a free network, the network
    # alone and the game alone at 4096 games x 32 simulations (6 x 128 bfloat16), then at 1024 games; a profile of
    # one call at 4096 for TensorBoard's or xprof's viewer (one file of the trace comes back if it is small enough).
    # shellcheck disable=SC2086
    "$PYTHON" experiments/benchmarks/selfplay_breakdown.py --out "$OUT/breakdown-4096.md" --trace "$RUNS/trace" \
        ${BREAKDOWN_ARGS:-} 2>&1 | tee "$OUT/breakdown.log"
    # shellcheck disable=SC2086
    "$PYTHON" experiments/benchmarks/selfplay_breakdown.py --games 1024 --out "$OUT/breakdown-1024.md" ${BREAKDOWN_ARGS:-} \
        2>&1 | tee -a "$OUT/breakdown.log"
    trace=$(find "$RUNS/trace" -name "*.xplane.pb" -size -40M 2>/dev/null | head -n 1)
    if [ -n "$trace" ]; then cp "$trace" "$OUT/selfplay.xplane.pb"; else echo "no profile small enough to bring back"; fi
    ;;
*)
    echo "unknown step $step: sweep, preset or breakdown" >&2
    exit 2
    ;;
esac
