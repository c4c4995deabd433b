"""The static-KV-cache decode step of :func:`baselines.policies.decoding.sample_batch` (``static_cache=True``).

After the (possibly prefix-shared) prefill, the KV cache is copied into a :class:`transformers.StaticCache` sized
``prompt width + max_new_tokens``, and every decode step runs on fixed-shape buffers: the fed tokens ``(B, 1)``, their
positions ``(B, 1)``, an attention mask ``(B, cache length)`` whose next column is switched on before each step, and
the step counter of the sampler. One step = model forward (bf16 weights on a GPU by default), sampling distribution
(:func:`process_logits`, in float32), the counter-based Gumbel-max draw (:func:`draw_tokens`) and the chosen token's
logprob, all on the device. Rows that end stay in the batch (fed the pad token): the shapes never change.

On CUDA the step is captured once in a CUDA graph (after a warm-up on a side stream) and replayed for every token;
the cache's write counter is restored after the capture so the replays write where the eager steps would. If the
capture fails (a model whose forward is not capturable), the step runs eagerly and ``graph_error`` says why. On any
other device the step runs eagerly: that is the path the CPU tests compare, token for token, with the plain decode.
The CUDA graph path runs only on a GPU, which the test suite never has: `benchmarks/gpu_check.py` measures it, and
nothing here claims a speed until that check's figures are in `benchmarks/RESULTS.md`.
"""

from __future__ import annotations

import torch

from baselines.policies.sampling import Prefill, cache_kw, draw_tokens, process_logits, uniform_seed

__all__ = ["StaticDecoder"]


class StaticDecoder:
    """Fixed-shape decode state for one batch (see the module docstring). ``sampled()`` gives the current step's
    tokens and logprobs; ``advance(tokens, finished)`` feeds them and runs the next step."""

    def __init__(self, model, pre: Prefill, row_keys, seed: int, temperature: float, top_p: float,
                 max_new_tokens: int, pad_id: int) -> None:
        from transformers import StaticCache  # lazy: transformers takes seconds to import; only this path needs it

        self.model, self.temperature, self.top_p, self.pad_id = model, temperature, top_p, pad_id
        B, W = pre.mask.shape
        device = pre.logits.device
        self.width = W
        self.cache = StaticCache(config=model.config, max_cache_len=W + max_new_tokens)
        for idx, layer in enumerate(pre.cache.layers):
            self.cache.update(layer.keys, layer.values, idx)
        self.kw = cache_kw(model)
        self.ids = torch.full((B, 1), pad_id, dtype=torch.long, device=device)
        self.pos = pre.next_pos[:, None].clone()
        self.mask = torch.zeros((B, W + max_new_tokens), dtype=pre.mask.dtype, device=device)
        self.mask[:, :W] = pre.mask
        self.keys = torch.tensor(list(row_keys), dtype=torch.long, device=device)
        self.seed = uniform_seed(seed, device)
        self.step = torch.zeros((), dtype=torch.long, device=device)
        self.n = 0
        self.tokens, self.logprobs = self._sample(pre.logits)
        self.graph = None
        self.graph_error: str | None = None
        if device.type == "cuda":
            self._capture()

    def _sample(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logp = process_logits(logits, self.temperature, self.top_p)
        if self.temperature <= 0:
            nxt = logits.argmax(-1)
        else:
            nxt = draw_tokens(logp, self.seed, self.keys, self.step)
        return nxt, logp.gather(1, nxt[:, None])[:, 0]

    def _forward_and_sample(self) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.model(input_ids=self.ids, attention_mask=self.mask, position_ids=self.pos, use_cache=True,
                         logits_to_keep=1, **{self.kw: self.cache})
        return self._sample(out.logits[:, -1])

    def _capture(self) -> None:
        lengths = [layer.cumulative_length.clone() for layer in self.cache.layers]
        try:
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(2):  # warm-up (allocator, kernels) outside the graph
                    self._forward_and_sample()
                    self._rewind(lengths)
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self.out_tokens, self.out_logprobs = self._forward_and_sample()
            self.graph = graph
        except Exception as e:  # noqa: BLE001 - an uncapturable forward falls back to eager steps, and says why
            self.graph, self.graph_error = None, f"{type(e).__name__}: {e}"
        self._rewind(lengths)

    def _rewind(self, lengths) -> None:
        for layer, n in zip(self.cache.layers, lengths):
            layer.cumulative_length.copy_(n)

    def sampled(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.tokens, self.logprobs

    def advance(self, tokens: torch.Tensor, finished: list[bool]) -> None:
        done = torch.tensor(finished, dtype=torch.bool, device=tokens.device)
        self.ids.copy_(torch.where(done, torch.full_like(tokens, self.pad_id), tokens)[:, None])
        self.mask[:, self.width + self.n] = 1
        if self.n > 0:
            self.pos.add_(1)
        self.n += 1
        self.step.fill_(self.n)
        if self.graph is not None:
            self.graph.replay()
            self.tokens, self.logprobs = self.out_tokens.clone(), self.out_logprobs.clone()
        else:
            self.tokens, self.logprobs = self._forward_and_sample()
