#!/bin/sh
# Reproduce the judge experiment (issue #32 section 3). CPU only; the training runs take 2-12 minutes each
# on a shared 2-core machine. Run `make eval` first: the data steps open its cached eval indexes and
# vault copies (.eval-work/<vault>-*). Everything generated goes to .eval-work/judge (gitignored);
# once the data is there, the training and evaluation steps run without the indexes.
#   sh bench/judge/run_all.sh --data   # rebuild the data, then train and evaluate
#   sh bench/judge/run_all.sh          # train and evaluate on the data already in .eval-work/judge
set -e
cd "$(dirname "$0")/../.."
PY=.venv/bin/python
W=.eval-work/judge
export HF_HUB_OFFLINE=1
if [ "$1" = "--data" ]; then
  nice -n 10 $PY -m bench.judge.sample_sections                      # $W/sampled_sections.jsonl; the questions on
                                                                     # them are hand-written: bench/data/judge/*.tsv
  nice -n 10 $PY -m bench.judge.neighbours                           # $W/synthetic.jsonl
  nice -n 10 $PY -m bench.judge.prep powershell eips tldr otel hugo  # $W/cands_*.jsonl
fi
# Run 1: cross-fitted judges (stock head, 1 epoch, lr 5e-5 / head 2e-3); the fold-0 judge scores sealed and hugo
nice -n 10 $PY -m bench.judge.train --fold 0 --out $W/model_fold0
nice -n 10 $PY -m bench.judge.train --fold 1 --out $W/model_fold1
nice -n 10 $PY -m bench.judge.evaluate | tee $W/eval.log                        # $W/eval.json
# Run 2: one judge, 3 epochs, lr 1e-4 / head 1e-3, trained without fold-0 train questions;
# the combination is fitted on fold-0 train questions only
nice -n 10 $PY -m bench.judge.train --fold 0 --epochs 3 --lr 1e-4 --head-lr 1e-3 --out $W/model_e3_fold0
nice -n 10 $PY -m bench.judge.evaluate --single $W/model_e3_fold0 | tee $W/eval_e3.log  # $W/eval_model_e3_fold0.json
nice -n 10 $PY -m bench.judge.paste_latency $W/model_e3_fold0          # $W/paste_latency_model_e3_fold0.json
