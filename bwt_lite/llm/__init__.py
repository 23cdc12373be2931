"""Paper III in pretrained language models: probes and diagnostics for Hugging Face causal LMs.

- :mod:`~bwt_lite.llm.offline`: load a model from the hub, or, where the hub cannot be reached, a small
  randomly initialised model of the same family and a tokenizer built locally (labelled as such).
- :mod:`~bwt_lite.llm.probe`: per-layer, per-head queries, keys (before and after rotary embeddings),
  values and attention patterns computed from the model's own projections, plus the residual stream.
- :mod:`~bwt_lite.llm.diagnostics`: key orthogonality with random-init and analytic baselines,
  attention entropy across depth, value-manifold PCA with bootstrap intervals.
- :mod:`~bwt_lite.llm.sula`: the SULA in-context labelling task with its exact posterior, the model's
  posterior from two label logits, and the entropy-axis intervention.
- :mod:`~bwt_lite.llm.prompts`: the prompt sets (mixed- and single-domain text).

``transformers`` is an optional dependency (``pip install bwt-lite[llm]``); the modules that need it
import it when called, so :mod:`~bwt_lite.llm.sula`'s exact posteriors work without it.
"""
