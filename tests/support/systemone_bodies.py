"""The stdlib tests' /v1/systemone request bodies: one question of each read kind, and a body
around any questions."""

NOUL_Q = {"type": "noul", "instructions": "Refund?"}
CHOICE_Q = {"type": "choice", "instructions": "Team?", "criteria": {"billing": "Pay", "tech": None}}
SCORE_Q = {"type": "score", "instructions": "Anger?", "criteria": ["Calm", "Annoyed", "Furious"]}


def req(questions, **extra):
    return {"model": "jev-latest", "state": "ticket", "questions": questions, **extra}
