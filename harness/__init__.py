"""codea1's core: hook specs, records, the plugin manager, the run store, the batch execution
API and the CLI. Imports nothing heavy (torch, vllm, ray, openrlhf, transformers) and nothing
from plugins/, benchmarks/, trainers/ or reports/."""


