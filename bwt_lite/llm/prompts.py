"""Prompt sets for the language-model chapter: templated sentences from several domains.

Every word used here is listed in this module, so :func:`vocabulary` can build a word-level tokenizer
that covers every prompt without downloading anything (the offline fallback of
:mod:`bwt_lite.llm.offline`).
"""
from __future__ import annotations

import random

# Each domain: a few templates with slots, and the words that fill them.
DOMAINS: dict[str, dict[str, list[str]]] = {
    "cooking": {
        "templates": [
            "Stir the {a} into the {b} and simmer for ten minutes .",
            "Chop the {a} finely and add it to the {b} .",
            "Season the {b} with {a} before serving it warm .",
            "Bake the {b} until the {a} turns golden .",
        ],
        "a": ["garlic", "onion", "butter", "pepper", "basil", "ginger", "honey", "lemon"],
        "b": ["soup", "sauce", "bread", "stew", "rice", "pasta", "salad", "dough"],
    },
    "sports": {
        "templates": [
            "The {a} scored twice as the {b} won the final .",
            "After the break the {a} passed the ball to the {b} .",
            "The {b} trained hard and the {a} praised the effort .",
            "Fans cheered when the {a} beat the {b} at home .",
        ],
        "a": ["striker", "captain", "coach", "keeper", "winger", "referee", "rookie", "veteran"],
        "b": ["team", "club", "squad", "side", "league", "rivals", "champions", "visitors"],
    },
    "law": {
        "templates": [
            "The {a} filed a motion to dismiss the {b} .",
            "Under the {b} the {a} must disclose all evidence .",
            "The court ruled that the {a} had breached the {b} .",
            "The {a} appealed after the judge upheld the {b} .",
        ],
        "a": ["plaintiff", "defendant", "attorney", "tenant", "landlord", "witness", "company", "trustee"],
        "b": ["contract", "claim", "statute", "lease", "verdict", "ruling", "charge", "agreement"],
    },
    "astronomy": {
        "templates": [
            "The {a} orbits the {b} once every few days .",
            "Light from the {b} reveals that the {a} is cooling .",
            "Astronomers measured the mass of the {a} near the {b} .",
            "The telescope found a {a} hidden behind the {b} .",
        ],
        "a": ["planet", "comet", "moon", "asteroid", "satellite", "dwarf", "pulsar", "probe"],
        "b": ["star", "galaxy", "nebula", "cluster", "sun", "quasar", "disk", "cloud"],
    },
    "programming": {
        "templates": [
            "The {a} returns a {b} when the input is empty .",
            "Call the {a} before you free the {b} .",
            "Each {b} is passed by reference to the {a} .",
            "The {a} raises an error if the {b} is missing .",
        ],
        "a": ["function", "method", "parser", "compiler", "server", "handler", "module", "thread"],
        "b": ["list", "string", "pointer", "buffer", "object", "array", "socket", "token"],
    },
    "medicine": {
        "templates": [
            "The {a} prescribed a {b} for the infection .",
            "After the {b} the {a} checked the blood pressure .",
            "The {a} noted that the {b} reduced the fever .",
            "A daily {b} was advised by the {a} .",
        ],
        "a": ["doctor", "nurse", "surgeon", "patient", "pharmacist", "clinic", "specialist", "midwife"],
        "b": ["vaccine", "tablet", "scan", "treatment", "injection", "therapy", "dose", "operation"],
    },
}

# Content words for the inputs of SULA examples (uninformative about the label).
SULA_WORDS: list[str] = [
    "apple", "river", "stone", "chair", "cloud", "piano", "window", "garden", "bottle", "candle",
    "forest", "mirror", "ladder", "pencil", "carpet", "bridge", "castle", "rocket", "violin", "tiger",
    "island", "jacket", "kettle", "lantern", "marble", "needle", "orange", "parrot", "quilt", "saddle",
]

# Nonsense label candidates: the first two that encode to a single token (with a leading space) are used.
LABEL_CANDIDATES: list[str] = ["wug", "dax", "foo", "bar", "baz", "qux", "zap", "zip", "blick", "zorp"]

# The fixed scaffolding words of the SULA prompts.
SULA_SCAFFOLD: list[str] = ["Input", "Label", ":"]


def domain_prompts(domains: list[str] | tuple[str, ...], n: int, seed: int = 0) -> list[str]:
    """``n`` sentences drawn evenly (round-robin) from ``domains``, templates and slots at random (seeded)."""
    unknown = [d for d in domains if d not in DOMAINS]
    if not domains or unknown:
        raise ValueError(f"domains must be a non-empty list from {sorted(DOMAINS)}, got {list(domains)}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = random.Random(seed)
    out = []
    for i in range(n):
        d = DOMAINS[domains[i % len(domains)]]
        out.append(rng.choice(d["templates"]).format(a=rng.choice(d["a"]), b=rng.choice(d["b"])))
    return out


def vocabulary() -> list[str]:
    """Every word and punctuation mark used by this module's prompts, sorted (for a local tokenizer)."""
    words: set[str] = set(SULA_WORDS) | set(LABEL_CANDIDATES) | set(SULA_SCAFFOLD)
    for d in DOMAINS.values():
        for t in d["templates"]:
            words |= {w for w in t.replace("{a}", " ").replace("{b}", " ").split()}
        words |= set(d["a"]) | set(d["b"])
    return sorted(words)
