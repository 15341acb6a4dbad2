"""The live suites' /v1/systemone bodies against the embedded model: a support ticket, one
question of each read kind, and the kwargs that read it untempered or with every technique off."""
from dataclasses import asdict

from onepass.config import Layout

TICKET = "I was charged twice for my subscription this month. Please refund one charge."
NOUL = {"type": "noul", "instructions": "Is the customer asking for money back?"}
CHOICE = {"type": "choice", "instructions": "Which team should handle this?",
          "criteria": {"Billing": "Payments and refunds", "Technical": "Bugs and outages",
                       "Sales": "Pricing and upgrades"}}
SCORE = {"type": "score", "instructions": "How angry is the customer?",
         "criteria": ["Calm", "Frustrated", "Very angry"]}


# The embedded profile's fitted temperatures flatten SmolLM2's answers toward uniform, which would
# make the live tests' 0.02 invariance tolerances easy to meet; those tests read untempered.
UNTEMPERED = {"temperature": {"noul": 1.0, "choice": 1.0, "score": 1.0}, "noul_floor": 0.0,
              "reread_below": 0.0, "label_prior": {}}


PLAIN = asdict(Layout())  # every technique off: the dataclass defaults


def body(questions, state=TICKET, **extra):
    return {"model": "jev-latest", "state": state, "questions": questions, **extra}


def raw(questions, state=TICKET, **extra):
    """body() read untempered (kwargs.calibration), for the invariance checks."""
    return body(questions, state, kwargs={"calibration": UNTEMPERED}, **extra)
