"""Generator plugins, one module per backend: hf, vllm, openai, replay."""
