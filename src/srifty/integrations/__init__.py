"""srifty with other tools: SkyPilot (:mod:`srifty.integrations.skypilot`).

An integration runs the other tool as a program or is called from inside it; it never makes srifty import
it: ``import srifty`` and every other stage work without it.
"""
