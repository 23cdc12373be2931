"""Storage, apart from training: the checkpoint format, the cache folder and hosted downloads.

- :mod:`~bwt_lite.store.files`: atomic writes, guarded reads, hashes and the seal (the format's bricks);
- :mod:`~bwt_lite.store.cache`: where the cache is, its marker, and clearing it;
- :mod:`~bwt_lite.store.checkpoint`: a trained model's checkpoint: save, load, verify, find;
- :mod:`~bwt_lite.store.resume`: the periodic state a training run resumes from;
- :mod:`~bwt_lite.store.hosted`: published checkpoints, downloaded and verified.

Nothing here trains: :mod:`bwt_lite.checkpoints` joins the store and the trainer (``load_or_train``).
``docs/checkpoints.md`` describes the format and the lookup order. Import from the submodules (this
``__init__`` stays empty, so reading the cache folder does not load the models).
"""
