"""``python -m zocrates_nb.index.embed --build``: build the ONNX model files once (see ``model.main``)."""

from zocrates_nb.index.embed.model import main

raise SystemExit(main())
