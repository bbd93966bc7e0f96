"""Messenger and Instagram webhook bodies -> our inbound events, one snapshot per fixture.

Each fixture is a body in Meta's own format; its snapshot is the whole event list we store or
ignore. Long ids and CDN URLs are named once below; everything else is literal.
"""

from __future__ import annotations

import json
import string
from importlib import resources
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frontdesk.errors import ConfigError, PayloadError
from frontdesk.ingestion.channels.messenger.inbound import parse_events

FIXTURES = resources.files("frontdesk.ingestion.channels.messenger").joinpath("fixtures")
ACCOUNT = "fb-acct"

AUDIO_URL = "https://cdn.fbsbx.com/v/t59.3654-21/451234567_1234567890123456_1234567890123456789_n.mp4/audioclip-1783000412345-3456.mp4?_nc_cat=103&ccb=1-7&_nc_sid=d61c36&_nc_ohc=Zk2mW8pQ4rEQ7kNvgFq1aBc&_nc_ht=cdn.fbsbx.com&oh=03_Q7cD1Ab2Cd3Ef4Gh5Ij6Kl7Mn8Op9Qr0&oe=68A20C11"
FILE_URL = "https://cdn.fbsbx.com/v/t59.2708-21/452300112_1122334455667788_8877665544332211009_n.pdf/Men%C3%BA%20verano%202026.pdf?_nc_cat=108&ccb=1-7&_nc_sid=2c9c2a&_nc_ohc=Fl5Kj7Hg9FdQ7kNvgHs2Kd1&_nc_ht=cdn.fbsbx.com&oh=03_Q7cD1Ab2Cd3Ef4Gh5Ij6&oe=68A22E33"
# Instagram mids are base64 of "ig_item:1:IGMessage:<account>:<thread>:<item>": one prefix per thread.
IG_THREAD = (
    "aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOjE3ODQxNDA1NzI2NjUzMDI2Oj"
    "M0MDI4MjM2Njg0MTcxMDMwMTI0NDI3NjAxOTc0MzkzNzQyMjYxMTozMTkw"
)
IGSID = "8127364590213846"
IG_ID = "17841405726653026"
IG_IMG_URL = "https://lookaside.fbsbx.com/ig_messaging_cdn/?asset_id=18023847561928374&signature=AbzKq7Lm2Xp9Rt4Vw1Ny6Bc3Dd8Ef5Gh0Ij7Kl2Mn9Op4Qr1St6Uv3Wx8Yz5A"
IG_MID_HEART = IG_THREAD + "NTc2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNAZDZD"
IG_MID_IMAGE = IG_THREAD + "NTYxMjA0NzczODQ1NjIwNzQyMDQ2NjcxMjMwNDk2MAZDZD"
IG_MID_STORY = IG_THREAD + "NTcwMTEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2NwZDZD"
IG_MID_STORY_REPLY = IG_THREAD + "NTc0NTY3ODkwMTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMgZDZD"
IG_MID_TEXT = IG_THREAD + "NTU3ODM1NTM4NDM2ODUxNTA3MTI2MDUxOTAzODk3NgZDZD"
IG_STORY_URL = "https://lookaside.fbsbx.com/ig_messaging_cdn/?asset_id=17998273645510293&signature=AbyT8uV3wX0yZ5aB2cD7eF4gH9iJ6kL1mN8oP5qR2sT9uV6wX3yZ0aB7cD4eF1g"
IMG1_URL = "https://scontent.xx.fbcdn.net/v/t1.15752-9/452189763_1038475629184736_6482910375648291037_n.jpg?_nc_cat=104&ccb=1-7&_nc_sid=fc17b8&_nc_ohc=Qx7aB3kLm9EQ7kNvgH2p4Zr&_nc_ad=z-m&_nc_cid=0&_nc_ht=scontent.xx&oh=03_Q7cD1Ab2Cd3Ef4Gh5Ij6Kl7Mn8Op9Qr0St1Uv2Wx3Yz4A&oe=68A1B2C3"
IMG2_URL = "https://scontent.xx.fbcdn.net/v/t1.15752-9/452189811_1183746502918374_2837465019283746510_n.jpg?_nc_cat=104&ccb=1-7&_nc_sid=fc17b8&_nc_ohc=Qx7aB3kLm9EQ7kNvgH2p4Zr&_nc_ad=z-m&_nc_cid=0&_nc_ht=scontent.xx&oh=03_Q7cD1Ab2Cd3Ef4Gh5Ij6Kl7Mn8Op9Qr0St1Uv2Wx3Yz4A&oe=68A1B2C3"
IMG3_URL = "https://scontent.xx.fbcdn.net/v/t1.15752-9/452190004_8837261549302817_1029384756102938475_n.png?_nc_cat=104&ccb=1-7&_nc_sid=fc17b8&_nc_ohc=Qx7aB3kLm9EQ7kNvgH2p4Zr&_nc_ad=z-m&_nc_cid=0&_nc_ht=scontent.xx&oh=03_Q7cD1Ab2Cd3Ef4Gh5Ij6Kl7Mn8Op9Qr0St1Uv2Wx3Yz4A&oe=68A1B2C3"
MID_AUDIO = "m_Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7Qw9Er1Ty3Ui5Op7As9Df1Gh3Jk5Lz7Xc9Vb1Nm3Qw5Er7TyU"
MID_B1 = "m_B1a2T3c4H5e6N7t8R9y0O1n2E3a4B5c6D7e8F9g0H1i2J3k4L5m6N7o8P9q0R1s2T3u4V5w6X7y8Z9a0B1cDeF"
MID_B2 = "m_B2x9Y8w7V6u5T4s3R2q1P0o9N8m7L6k5J4i3H2g1F0e9D8c7B6a5Z4y3X2w1V0u9T8s7R6q5P4o3N2m1LkJiHg"
MID_FALLBACK = "m_toDnmDFa1Lb3Ck5Dm7En9Fo1Gp3Hq5Ir7Js9Kt1Lu3Mv5Nw7Ox9Py1Qz3Ra5Sb7Tc9Ud1Ve3Wf5Xg7Yh9ZiAj"
MID_FILE = "m_Fl5Kj7Hg9Fd1Sa3Qw5Er7Ty9Ui1Op3As5Df7Gh9Jk1Lz3Xc5Vb7Nm9Qw1Er3Ty5Ui7Op9As1Df3Gh5Jk7LzXcV"
MID_IMAGE = "m_Rb8hT1qW4eYk6uJ0oP2aS5dF7gH9jK3lZ1xC4vB6nM8qW0eR2tY4uI6oP8aS0dF2gH4jK6lZ8xC0vB2nM4qWe"
MID_QUICK = "m_Qr1Ck3Ly5Rp7Lz9Xc1Vb3Nm5Qa7Ws9Ed1Rf3Tg5Yh7Uj9Ik1Ol3Pz5Xs7Cd9Vf1Bg3Nh5Mj7Ki9Lo1Pa3SqWe"
MID_REPLIED = "m_1fTq8oLumEyIp3Q2MR-aY7IfLZDamVrALniheUYEDdHJXjDXEAyaS1xxONzb2Iv-DFzmTihfWJV012P5pK0AhQ"
MID_REPLY = "m_Rp6Ly8Tq0Wm2Bn4Vc6Xz8As0Df2Gh4Jk6Lq8We0Rt2Yu4Io6Pa8Sd0Fg2Hj4Kl6Zx8Cv0Bn2Mq4Wa6Es8RdTf"
MID_STICKER = "m_Pm2On4Ib6Uv8Yc0Tx2Rz4Ea6Wq8Sd0Fg2Hj4Kl6Zx8Cv0Bn2Mq4Wa6Es8Rd0Tf2Gy4Hu6Ji8Ko0Lp2Za4XsD"
MID_STICKER_BOTH = "m_Lk7Jh5Gf3Ds1Aq9Wz7Ex5Rc3Tv1Yb9Un7Im5Ok3Pl1Qa9Ws7Ed5Rf3Tg1Yh9Uj7Ik5Ol3Pz1Xs9Cd7Vf5BgN"
MID_STICKER_LEGACY = "mid.$cAAJdkrCd2ORnva8ErFhjGm0X_Q_c"
MID_TEMPLATE = "m_Tp8Lt0Pr2Od4Uc6Tq8Wa0Es2Rd4Tf6Gy8Hu0Ji2Ko4Lp6Za8Xs0Cd2Vf4Bg6Nh8Mj0Ki2Lo4Pq6We8RtYuIo"
MID_TEXT = "m_Xk3vQ9dT2bLp7rW1nC5yHf0aJ8sE4uGm6oZqVtR2xKcN1wPbYi7DhLf3jAeU9gSn0rMkOq5vTz8yBw2lC4Fd6A"
MID_TEXT_IMAGE = "m_Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8Ba7Zy6Xw5Vu4Ts3Rq2Po1Nm0Lk9Ji8Hg7Fe6Dc5Ba4Zy3XwVu"
MID_THREE = "m_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6a7B8c9D0e1F2g3H4i5J6k7L8m9N0o1P2qR"
MID_UNICODE = "m_Un1Ic3Od5Ex7Qw9Er1Ty3Ui5Op7As9Df1Gh3Jk5Lz7Xc9Vb1Nm3Qa5Ws7Ed9Rf1Tg3Yh5Uj7Ik9Ol1PzXsCdE"
MID_VIDEO = "m_Vd4Yh6Nm8Ju0Ik2Ol4Pq6Aw8Se0Dr2Ft4Gy6Hu8Jk0Lz2Xc4Vb6Nm8Qa0Ws2Ed4Rf6Tg8Yh0Uj2Ik4Ol6PzXs"
PAGE_ID = "104857392016485"
PSID = "7234019865123456"
PSID2 = "6890123457788001"
VIDEO_URL = "https://video.xx.fbcdn.net/v/t42.3356-2/452233445_1029384756473829_1928374650192837465_n.mp4/video-1783000512345.mp4?_nc_cat=101&ccb=1-7&_nc_sid=060d78&_nc_ohc=Vd4Yh6Nm8JuQ7kNvgE5tY2u&_nc_ht=video.xx&oh=03_Q7cD1Ab2Cd3Ef4Gh5Ij6Kl7Mn8Op9&oe=68A21D22"

# fixture stem -> the whole event list, as model_dump() gives it
EXPECTED: dict[str, list[dict[str, Any]]] = {
    "batch__two_entries": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_B1,
            "content_type": "text",
            "text": "Also, do you deliver to Lyon?",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {"mid": MID_B1, "recipient_id": PAGE_ID, "timestamp": 1783001412345},
        },
        {"type": "ignored", "reason": "delivery receipt"},
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID2,
            "channel_message_id": MID_B2,
            "content_type": "image",
            "text": "[image: loading] Here's the receipt",
            "contact_name": None,
            "status": "pending",
            "media": {"kind": "image", "ref": IMG3_URL, "mime_type": None, "size": None, "duration_s": None},
            "metadata": {
                "mid": MID_B2,
                "recipient_id": PAGE_ID,
                "timestamp": 1783001412901,
                "attachment_type": "image",
                "caption": "Here's the receipt",
            },
        },
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID2,
            "channel_message_id": f"{MID_B2}#1",
            "content_type": "file",
            "text": "[file: Menú verano 2026.pdf]",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "mid": MID_B2,
                "recipient_id": PAGE_ID,
                "timestamp": 1783001412901,
                "attachment_type": "file",
                "attachment_url": FILE_URL,
            },
        },
        {"type": "ignored", "reason": "read receipt"},
    ],
    "delivery__watermark": [{"type": "ignored", "reason": "delivery receipt"}],
    "instagram_changes__comments": [{"type": "ignored", "reason": "comments change"}],
    "instagram_echo__text": [{"type": "ignored", "reason": "echo"}],
    "instagram_message__image": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": IGSID,
            "channel_message_id": IG_MID_IMAGE,
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": None,
            "status": "pending",
            "media": {"kind": "image", "ref": IG_IMG_URL, "mime_type": None, "size": None, "duration_s": None},
            "metadata": {
                "mid": IG_MID_IMAGE,
                "recipient_id": IG_ID,
                "timestamp": 1783002112345,
                "attachment_type": "image",
            },
        }
    ],
    "instagram_message__like_heart": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": IGSID,
            "channel_message_id": IG_MID_HEART,
            "content_type": "sticker",
            "text": "[sticker: ❤️]",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "mid": IG_MID_HEART,
                "recipient_id": IG_ID,
                "timestamp": 1783002712345,
                "attachment_type": "like_heart",
            },
        }
    ],
    "instagram_message__story_mention": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": IGSID,
            "channel_message_id": IG_MID_STORY,
            "content_type": "text",
            "text": f"[story mention] {IG_STORY_URL}",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "mid": IG_MID_STORY,
                "recipient_id": IG_ID,
                "timestamp": 1783002412345,
                "attachment_type": "story_mention",
            },
        }
    ],
    "instagram_message__story_reply": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": IGSID,
            "channel_message_id": IG_MID_STORY_REPLY,
            "content_type": "text",
            "text": "is this jacket still in stock??",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "mid": IG_MID_STORY_REPLY,
                "recipient_id": IG_ID,
                "timestamp": 1783002612345,
                "reply_to_story_id": "3412987654321098765",
                "reply_to_story_url": IG_STORY_URL,
            },
        }
    ],
    "instagram_message__text": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": IGSID,
            "channel_message_id": IG_MID_TEXT,
            "content_type": "text",
            "text": "hey do you ship to Canada?",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {"mid": IG_MID_TEXT, "recipient_id": IG_ID, "timestamp": 1783002012345},
        }
    ],
    "instagram_message__unsupported": [{"type": "ignored", "reason": "unsupported message"}],
    "instagram_seen__read": [{"type": "ignored", "reason": "read receipt"}],
    "message__audio": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_AUDIO,
            "content_type": "audio",
            "text": "[audio message: being transcribed]",
            "contact_name": None,
            "status": "pending",
            "media": {"kind": "audio", "ref": AUDIO_URL, "mime_type": None, "size": None, "duration_s": None},
            "metadata": {
                "mid": MID_AUDIO,
                "recipient_id": PAGE_ID,
                "timestamp": 1783000412345,
                "attachment_type": "audio",
            },
        }
    ],
    "message__deleted": [{"type": "ignored", "reason": "deleted message"}],
    "message__fallback_link": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_FALLBACK,
            "content_type": "text",
            "text": "This is where I want to go: https://youtu.be/bbo_fZAjIhg\n[shared link: TAHITI - Heaven on Earth]",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "mid": MID_FALLBACK,
                "recipient_id": PAGE_ID,
                "timestamp": 1783001812345,
                "attachment_type": "fallback",
            },
        }
    ],
    "message__file": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_FILE,
            "content_type": "file",
            "text": "[file: Menú verano 2026.pdf]",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "mid": MID_FILE,
                "recipient_id": PAGE_ID,
                "timestamp": 1783000612345,
                "attachment_type": "file",
                "attachment_url": FILE_URL,
            },
        }
    ],
    "message__image": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_IMAGE,
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": None,
            "status": "pending",
            "media": {"kind": "image", "ref": IMG1_URL, "mime_type": None, "size": None, "duration_s": None},
            "metadata": {
                "mid": MID_IMAGE,
                "recipient_id": PAGE_ID,
                "timestamp": 1783000201234,
                "attachment_type": "image",
            },
        }
    ],
    "message__other_page": [{"type": "ignored", "reason": "another page"}],
    "message__quick_reply": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_QUICK,
            "content_type": "text",
            "text": "Tuesday 10:00",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "mid": MID_QUICK,
                "recipient_id": PAGE_ID,
                "timestamp": 1783000812345,
                "quick_reply_payload": "BOOK_SLOT_2026-07-14T10:00",
            },
        }
    ],
    "message__reply_to": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_REPLY,
            "content_type": "text",
            "text": "Yes, that's the one I mean",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "mid": MID_REPLY,
                "recipient_id": PAGE_ID,
                "timestamp": 1783000712345,
                "reply_to_mid": MID_REPLIED,
            },
        }
    ],
    "message__sticker": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_STICKER,
            "content_type": "sticker",
            "text": "[sticker]",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "mid": MID_STICKER,
                "recipient_id": PAGE_ID,
                "timestamp": 1783000431234,
                "attachment_type": "sticker",
                "sticker_id": "369239263222822",
            },
        }
    ],
    "message__sticker_legacy": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_STICKER_LEGACY,
            "content_type": "sticker",
            "text": "[sticker]",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "mid": MID_STICKER_LEGACY,
                "recipient_id": PAGE_ID,
                "timestamp": 1783000441234,
                "attachment_type": "image",
                "sticker_id": "369239263222822",
            },
        }
    ],
    "message__sticker_legacy_and_new": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_STICKER_BOTH,
            "content_type": "sticker",
            "text": "[sticker]",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "mid": MID_STICKER_BOTH,
                "recipient_id": PAGE_ID,
                "timestamp": 1783000421234,
                "attachment_type": "sticker",
                "sticker_id": "369239263222822",
            },
        }
    ],
    "message__template_with_text": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_TEMPLATE,
            "content_type": "text",
            "text": "How much is this one?",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "mid": MID_TEMPLATE,
                "recipient_id": PAGE_ID,
                "timestamp": 1783001912345,
                "attachment_type": "template",
            },
        }
    ],
    "message__text": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_TEXT,
            "content_type": "text",
            "text": "Hi! Do you have the blue sneakers in size 42?",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {"mid": MID_TEXT, "recipient_id": PAGE_ID, "timestamp": 1783000101234},
        }
    ],
    "message__text_and_image": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_TEXT_IMAGE,
            "content_type": "image",
            "text": "[image: loading] Is this one still available?",
            "contact_name": None,
            "status": "pending",
            "media": {"kind": "image", "ref": IMG2_URL, "mime_type": None, "size": None, "duration_s": None},
            "metadata": {
                "mid": MID_TEXT_IMAGE,
                "recipient_id": PAGE_ID,
                "timestamp": 1783000311234,
                "attachment_type": "image",
                "caption": "Is this one still available?",
            },
        }
    ],
    "message__three_images": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_THREE,
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": None,
            "status": "pending",
            "media": {"kind": "image", "ref": IMG1_URL, "mime_type": None, "size": None, "duration_s": None},
            "metadata": {
                "mid": MID_THREE,
                "recipient_id": PAGE_ID,
                "timestamp": 1783000301234,
                "attachment_type": "image",
            },
        },
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": f"{MID_THREE}#1",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": None,
            "status": "pending",
            "media": {"kind": "image", "ref": IMG2_URL, "mime_type": None, "size": None, "duration_s": None},
            "metadata": {
                "mid": MID_THREE,
                "recipient_id": PAGE_ID,
                "timestamp": 1783000301234,
                "attachment_type": "image",
            },
        },
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": f"{MID_THREE}#2",
            "content_type": "image",
            "text": "[image: loading]",
            "contact_name": None,
            "status": "pending",
            "media": {"kind": "image", "ref": IMG3_URL, "mime_type": None, "size": None, "duration_s": None},
            "metadata": {
                "mid": MID_THREE,
                "recipient_id": PAGE_ID,
                "timestamp": 1783000301234,
                "attachment_type": "image",
            },
        },
    ],
    "message__unicode": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_UNICODE,
            "content_type": "text",
            "text": "Xin chào 👋 có size 42 không?\n東京へ送れますか\uff1f مرحبا 👨\u200d👩\u200d👧 https://shop.example/p/42",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {"mid": MID_UNICODE, "recipient_id": PAGE_ID, "timestamp": 1783003012345},
        }
    ],
    "message__video": [
        {
            "type": "message",
            "channel_account_id": "fb-acct",
            "contact_external_id": PSID,
            "channel_message_id": MID_VIDEO,
            "content_type": "video",
            "text": "[video]",
            "contact_name": None,
            "status": "ready",
            "media": None,
            "metadata": {
                "mid": MID_VIDEO,
                "recipient_id": PAGE_ID,
                "timestamp": 1783000512345,
                "attachment_type": "video",
                "attachment_url": VIDEO_URL,
            },
        }
    ],
    "message_echo__text": [{"type": "ignored", "reason": "echo"}],
    "postback__get_started": [{"type": "ignored", "reason": "postback"}],
    "reaction__love": [{"type": "ignored", "reason": "reaction"}],
    "read__watermark": [{"type": "ignored", "reason": "read receipt"}],
    "standby__text": [{"type": "ignored", "reason": "standby"}],
}

MALFORMED = {
    # fixture -> is the body unparseable (True) or parseable but wrong (False)
    "malformed__not_json.txt": True,
    "malformed__no_entry.json": False,
    "malformed__wrong_object.json": False,
}


def fixture(name: str) -> bytes:
    return FIXTURES.joinpath(name).read_bytes()


def channel_of(stem: str) -> str:
    return "instagram" if stem.startswith("instagram") else "messenger"


def config_of(channel: str) -> dict[str, str]:
    return {"instagram_id": IG_ID} if channel == "instagram" else {"page_id": PAGE_ID}


def parse(body: bytes | dict[str, Any], channel: str = "messenger", config: dict[str, Any] | None = None) -> list[Any]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    events = parse_events(raw, ACCOUNT, config_of(channel) if config is None else config, channel=channel)
    return [event.model_dump() for event in events]


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_fixture_parses_to_its_snapshot(stem: str) -> None:
    channel = channel_of(stem)
    assert parse(fixture(f"{stem}.json"), channel) == EXPECTED[stem]


@pytest.mark.parametrize(("name", "malformed"), sorted(MALFORMED.items()))
def test_malformed_fixture_is_a_payload_error(name: str, malformed: bool) -> None:
    with pytest.raises(PayloadError) as caught:
        parse(fixture(name))
    assert caught.value.malformed is malformed


def test_every_fixture_in_the_folder_has_a_test() -> None:
    on_disk = {entry.name for entry in FIXTURES.iterdir() if entry.is_file()}
    assert on_disk == {f"{stem}.json" for stem in EXPECTED} | set(MALFORMED)


def test_a_redelivery_yields_the_same_message_ids() -> None:
    body = fixture("message__three_images.json")
    first, again = parse(body), parse(body)
    assert [e["channel_message_id"] for e in first] == [e["channel_message_id"] for e in again]
    assert [e["channel_message_id"] for e in first] == [MID_THREE, f"{MID_THREE}#1", f"{MID_THREE}#2"]


@pytest.mark.parametrize(
    ("stem", "channel"),
    [("instagram_message__text", "messenger"), ("message__text", "instagram")],
)
def test_a_webhook_of_the_other_product_is_refused(stem: str, channel: str) -> None:
    with pytest.raises(PayloadError, match="takes object") as caught:
        parse(fixture(f"{stem}.json"), channel)
    assert caught.value.malformed is False


def test_without_a_configured_id_every_entry_is_accepted() -> None:
    (event,) = parse(fixture("message__other_page.json"), config={})
    assert (event["type"], event["text"]) == ("message", "Hi, I'd like to order")


def test_a_numeric_configured_page_id_still_filters() -> None:
    assert parse(fixture("message__text.json"), config={"page_id": int(PAGE_ID)})[0]["type"] == "message"
    assert parse(fixture("message__text.json"), config={"page_id": 1}) == [
        {"type": "ignored", "reason": "another page"}
    ]


def test_an_unusable_config_id_is_our_fault() -> None:
    with pytest.raises(ConfigError):
        parse(fixture("message__text.json"), config={"page_id": ["104857392016485"]})


def test_an_unknown_channel_name_is_our_fault() -> None:
    with pytest.raises(ConfigError):
        parse_events(fixture("message__text.json"), ACCOUNT, {}, channel="whatsapp")


@pytest.mark.parametrize("raw", [b"[]", b'"page"', b"null", b"42", b"\xff\xfe\x00", b"", b"[" * 100_000])
def test_a_body_that_is_not_a_json_object_is_malformed(raw: bytes) -> None:
    with pytest.raises(PayloadError) as caught:
        parse(raw)
    assert caught.value.malformed is True


@pytest.mark.parametrize(
    "body",
    [
        {"object": "page", "entry": []},
        {"object": "page", "entry": {"id": PAGE_ID}},
        {"object": "page", "entry": [{"time": 1783000000000, "messaging": []}]},
        {"object": "page", "entry": [{"id": PAGE_ID, "messaging": [{"timestamp": "soon"}]}]},
        {
            "object": "page",
            "entry": [{"id": PAGE_ID, "messaging": [{"sender": {"id": PSID}, "message": {"text": "hi"}}]}],
        },
        {"object": "page", "entry": [{"id": PAGE_ID, "messaging": [{"sender": {"id": 7}, "message": {"mid": "m_1"}}]}]},
        {"object": "page", "entry": [{"id": PAGE_ID, "messaging": [{"message": {"mid": "m_1", "attachments": "x"}}]}]},
        {"object": "page", "entry": [{"id": PAGE_ID, "messaging": [{"message": {"mid": "m" * 291}}]}]},
        {"object": 3, "entry": [{"id": PAGE_ID}]},
        {"object": "page", "entry": [{"id": PAGE_ID, "messaging": [{"message": {"mid": "m_1\u0000"}}]}]},
    ],
)
def test_a_body_of_the_wrong_shape_is_a_payload_error(body: dict[str, Any]) -> None:
    with pytest.raises(PayloadError) as caught:
        parse(body)
    assert caught.value.malformed is False


def message_body(message: dict[str, Any], **event: Any) -> dict[str, Any]:
    messaging = {"sender": {"id": PSID}, "recipient": {"id": PAGE_ID}, "timestamp": 1783000000000, "message": message}
    return {"object": "page", "entry": [{"id": PAGE_ID, "time": 1783000000100, "messaging": [{**messaging, **event}]}]}


def test_an_image_without_a_fetchable_url_has_no_media_and_is_stored_as_not_available() -> None:
    # A signed body can still name any URL, and the download runs inside our network: only https
    # on Meta's CDN is followed.
    refused = [
        "http://scontent.xx.fbcdn.net/v/a.jpg",
        "https://scontent.xx.fbcdn.net/" + "a" * 4000,
        "https://169.254.169.254/latest/meta-data/",
        "https://localhost/a.jpg",
        "https://fbcdn.net.evil.example/a.jpg",
        "https://scontent.xx.fbcdn.net:8443/a.jpg",
        "https://user@scontent.xx.fbcdn.net/a.jpg",
        "https://[::1/a.jpg",
    ]
    for attachment in [{"type": "image", "payload": {"url": url}} for url in refused] + [{"type": "image"}]:
        (event,) = parse(message_body({"mid": "m_1", "text": "this one", "attachments": [attachment]}))
        assert (event["content_type"], event["status"], event["media"]) == ("image", "ready", None)
        assert event["text"] == "[image: not available] this one"
    (alone,) = parse(message_body({"mid": "m_1", "attachments": [{"type": "image"}]}))
    assert (alone["status"], alone["text"]) == ("ready", "[image: not available]")


def test_media_on_the_accounts_own_api_base_is_fetchable() -> None:
    # The test double (or a proxy the operator configured) is the one non-CDN base we follow.
    local = "http://127.0.0.1:8123/cdn/a.jpg"
    config = {"page_id": PAGE_ID, "api_base_url": "http://127.0.0.1:8123"}
    attachment = {"type": "image", "payload": {"url": local}}
    (event,) = parse(message_body({"mid": "m_1", "attachments": [attachment]}), config=config)
    assert (event["status"], event["media"]["ref"]) == ("pending", local)
    other_port = {"type": "image", "payload": {"url": "http://127.0.0.1:81234/cdn/a.jpg"}}
    (event,) = parse(message_body({"mid": "m_1", "attachments": [other_port]}), config=config)
    assert event["media"] is None


def test_an_unsupported_attachment_is_ignored_unless_it_carries_the_text() -> None:
    booking = {"type": "appointment_booking", "payload": {"booking_id": "998877", "status": "requested"}}
    assert parse(message_body({"mid": "m_1", "attachments": [booking]})) == [
        {"type": "ignored", "reason": "unsupported attachment: appointment_booking"}
    ]
    fallback_without_payload = {"type": "fallback"}
    assert parse(message_body({"mid": "m_1", "attachments": [fallback_without_payload]})) == [
        {"type": "ignored", "reason": "unsupported attachment: fallback"}
    ]


def test_the_text_goes_with_the_first_attachment_only() -> None:
    images = [{"type": "image", "payload": {"url": IMG1_URL}}, {"type": "image", "payload": {"url": IMG2_URL}}]
    first, second = parse(message_body({"mid": "m_1", "text": "both of these", "attachments": images}))
    assert (first["text"], second["text"]) == ("[image: loading] both of these", "[image: loading]")


def test_a_message_without_a_sender_id_is_ignored() -> None:
    body = message_body({"mid": "m_1", "text": "hi"}, sender={"user_ref": "optin-ref-1"})
    assert parse(body) == [{"type": "ignored", "reason": "message without a sender id"}]


def test_a_message_sent_by_the_page_itself_is_an_echo_even_without_the_flag() -> None:
    body = message_body({"mid": "m_1", "text": "Thanks!"}, sender={"id": PAGE_ID}, recipient={"id": PSID})
    assert parse(body) == [{"type": "ignored", "reason": "echo"}]


def test_an_event_we_do_not_know_is_ignored_by_name() -> None:
    body = message_body({"mid": "m_1"})
    messaging = body["entry"][0]["messaging"][0]
    del messaging["message"]
    assert parse(body) == [{"type": "ignored", "reason": "unknown event"}]
    messaging["pass_thread_control"] = {"new_owner_app_id": "123456789", "metadata": "escalate"}
    assert parse(body) == [{"type": "ignored", "reason": "handover"}]


def test_a_file_named_only_by_title_or_not_at_all() -> None:
    titled = {"type": "file", "payload": {"url": "https://cdn.fbsbx.com/v/t59/x", "title": "Invoice.pdf"}}
    anonymous = {"type": "file", "payload": {"url": "https://cdn.fbsbx.com/v/t59.2708-21/452300112"}}
    first, second = parse(message_body({"mid": "m_1", "attachments": [titled, anonymous]}))
    assert (first["text"], second["text"]) == ("[file: Invoice.pdf]", "[file]")


def test_a_location_is_text_with_its_coordinates() -> None:
    pin = {"type": "location", "payload": {"title": "Pinned Location", "coordinates": {"lat": 45.764, "long": 4.8357}}}
    (event,) = parse(message_body({"mid": "m_1", "attachments": [pin]}))
    assert (event["content_type"], event["text"]) == ("text", "[location: Pinned Location] 45.764, 4.8357")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
TEXT = st.none() | st.text(max_size=30)
# Meta's ids are ASCII (control characters in ids are refused: see the wrong-shape cases).
ID = st.text(string.ascii_letters + string.digits + "_-.$:", min_size=1, max_size=40)
URL = st.sampled_from([IMG1_URL, FILE_URL, "http://a.example/b.jpg", "https://", "ftp://a/b", "", "x" * 5000]) | TEXT
ATTACHMENT = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            [
                "image",
                "audio",
                "video",
                "ig_reel",
                "file",
                "sticker",
                "like_heart",
                "fallback",
                "share",
                "story_mention",
                "location",
                "template",
            ]
        )
        | st.text(min_size=1, max_size=12)
    },
    optional={
        "payload": st.none()
        | st.fixed_dictionaries(
            {},
            optional={
                "url": URL,
                "title": TEXT,
                "sticker_id": st.none() | st.integers(0, 10**16),
                "coordinates": st.fixed_dictionaries({"lat": st.floats(-90, 90), "long": st.floats(-180, 180)}),
            },
        )
    },
)
MESSAGE = st.fixed_dictionaries(
    {"mid": ID},
    optional={
        "text": TEXT,
        "attachments": st.lists(ATTACHMENT, max_size=4),
        "is_echo": st.booleans(),
        "is_deleted": st.booleans(),
        "is_unsupported": st.booleans(),
        "reply_to": st.fixed_dictionaries(
            {}, optional={"mid": TEXT, "story": st.fixed_dictionaries({"id": TEXT, "url": URL})}
        ),
        "quick_reply": st.fixed_dictionaries({"payload": TEXT}),
        "sticker_id": st.none() | st.integers(0, 10**16),
    },
)
PARTY = st.fixed_dictionaries({}, optional={"id": st.sampled_from([PSID, PAGE_ID]) | ID, "user_ref": TEXT})
MESSAGE_EVENT = st.fixed_dictionaries(
    {
        "sender": st.fixed_dictionaries({"id": st.sampled_from([PSID, PSID, PSID, PAGE_ID]) | ID}),
        "recipient": st.fixed_dictionaries({"id": st.just(PAGE_ID)}),
        "timestamp": st.integers(0, 2**53),
        "message": MESSAGE,
    }
)
OTHER_EVENT = st.fixed_dictionaries(
    {},
    optional={
        "sender": PARTY,
        "recipient": PARTY,
        "timestamp": st.integers(0, 2**53),
        "message": MESSAGE,
        "delivery": st.fixed_dictionaries({"watermark": st.integers(0, 2**53)}),
        "read": st.fixed_dictionaries({}, optional={"watermark": st.integers(0, 2**53), "mid": TEXT}),
        "reaction": st.fixed_dictionaries({"action": st.sampled_from(["react", "unreact"]), "emoji": TEXT}),
        "optin": st.dictionaries(st.text(max_size=8), JSON, max_size=3),
    },
)
ENTRY = st.fixed_dictionaries(
    {
        "id": st.sampled_from([PAGE_ID, PAGE_ID, PAGE_ID, "231904857716203"]),
        "messaging": st.lists(MESSAGE_EVENT, max_size=3),
    },
    optional={
        "time": st.integers(0, 2**53),
        "standby": st.lists(OTHER_EVENT, max_size=2),
        "changes": st.lists(st.fixed_dictionaries({}, optional={"field": TEXT}), max_size=2),
    },
)
ENTRY_WITH_OTHER_EVENTS = st.tuples(ENTRY, st.lists(OTHER_EVENT, max_size=2)).map(
    lambda pair: {**pair[0], "messaging": [*pair[0]["messaging"], *pair[1]]}
)
ENVELOPE = st.fixed_dictionaries(
    {"object": st.just("page"), "entry": st.lists(ENTRY_WITH_OTHER_EVENTS, min_size=1, max_size=3)}
)
FUZZ = settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(body=ENVELOPE)
def test_every_event_of_any_well_formed_body_yields_an_event(body: dict[str, Any]) -> None:
    try:
        events = parse(body)
    except PayloadError:
        return  # a value our event types refuse (an empty sender id, a control character...)
    received = sum(
        len(e.get("messaging", [])) + len(e.get("standby", [])) + len(e.get("changes", [])) for e in body["entry"]
    )
    assert len(events) >= received
    for event in events:
        if event["type"] == "message":
            assert event["channel_message_id"].startswith(event["metadata"]["mid"])
            assert event["media"] is None or event["media"]["ref"].startswith("https://")


@FUZZ
@given(body=JSON)
def test_any_json_body_yields_events_or_a_payload_error(body: Any) -> None:
    try:
        events = parse(json.dumps(body).encode())
    except PayloadError:
        return
    assert all(event["type"] in ("message", "ignored") for event in events)
