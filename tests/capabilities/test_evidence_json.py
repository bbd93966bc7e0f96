"""What a tool proved survives the ledger: evidence saved as JSON reads back the same."""

from __future__ import annotations

import json

from frontdesk.capabilities.tools import ToolEvidence


def test_every_kind_of_evidence_reads_back_from_its_json_as_it_was_saved():
    evidence = ToolEvidence(
        references=frozenset({"banh-kem"}),
        prices=("250.000 ₫ / bánh 16 cm",),
        prices_by_reference={"banh-kem": ("250.000 ₫ / bánh 16 cm",)},
        photos={"banh-kem-1": "https://shop.example/m/1.png"},
        captions={"https://shop.example/m/1.png": "Bánh kem dâu 16 cm"},
        facts=frozenset({"business_info"}),
        events=(("lead_captured", "fu-1"),),
        contacts=("+84281234567",),
        texts=("Giao hàng trong Quận 1", "10%"),
        schedule={"mon": ("07:00-20:00",), "2027-02-05": ()},
        turnaround_days={"banh-kem": 1},
        minimums={"banh-kem": 1},
        revision=4,
    )

    assert ToolEvidence.from_json(json.loads(json.dumps(evidence.as_json()))) == evidence
