"""The example registry's `stores` specialist: a small agent of its own, served over A2A 1.0
(JSON-RPC, streaming over SSE) with the official A2A SDK for Python (`a2a-sdk`), as another
team would run it. It answers where the partner stores are and when they open, from
stores.json (demo data). A question that names no city it knows is answered with a question
back (the task waits in INPUT_REQUIRED), and the user's reply continues the same task.

    python store_agent.py PORT

Set BATON_STORE_AGENT_DELAY_MS to make it pause before answering (the tests' slow agent).
With OTEL_EXPORTER_OTLP_ENDPOINT set, its spans go to that OTLP receiver and continue the
caller's trace (the `traceparent` header).
"""

import asyncio
import json
import os
import re
import sys
from pathlib import Path

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers.default_request_handler_v2 import DefaultRequestHandlerV2
from a2a.server.routes.agent_card_routes import create_agent_card_routes
from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette

DATA = json.loads((Path(__file__).parent / "stores.json").read_text())
STORES = DATA["stores"]
CITIES = sorted({s["city"] for s in STORES})
BRANDS = sorted({s["brand"] for s in STORES})
# The words that ask for a service, by the service's name in the data.
SERVICES = {
    "bakery": {"bakery", "bakeries", "bread"},
    "pharmacy": {"pharmacy", "pharmacies", "chemist"},
    "coffee": {"coffee", "cafe", "café"},
    "fuel": {"fuel", "petrol", "gas"},
}
DELAY_S = int(os.environ.get("BATON_STORE_AGENT_DELAY_MS", "0")) / 1000
# Longest piece of the answer sent in one artifact chunk: the answer streams.
CHUNK = 160


def tracer():
    """A tracer exporting to OTLP when the standard variables say where; None otherwise."""
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return None
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "store-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return trace.get_tracer("store-agent")


TRACER = tracer()


def words(text):
    return re.findall(r"[a-z0-9&]+", text.lower())


def find(names, text):
    """The names (cities or brands) the text mentions, in the data's spelling."""
    said = " ".join(words(text))
    return [n for n in names if " ".join(words(n)) in said]


def describe(store):
    hours = ", ".join(f"{days} {span}" for days, span in store["hours"].items())
    services = ", ".join(store["services"])
    return f"- {store['name']}, {store['address']}, {store['city']}: {hours} ({services})"


def answer(text):
    """The answer to a question (all the user said in this task), or None when it names no
    city: then the agent asks which one."""
    cities = find(CITIES, text)
    if not cities:
        return None
    brands = find(BRANDS, text)
    stores = [s for s in STORES if s["city"] in cities and (not brands or s["brand"] in brands)]
    said = set(words(text))
    if said & {"late", "night", "24", "midnight"}:
        stores = [s for s in stores if any(span.endswith(("22:00", "24:00")) for span in s["hours"].values())]
    for service, asked in SERVICES.items():
        if said & asked:
            stores = [s for s in stores if service in s["services"]]
    if said & {"sunday", "sun", "weekend"}:
        stores = [s for s in stores if any("Sun" in days and span != "closed" for days, span in s["hours"].items())]
    where = " and ".join(cities)
    if not stores:
        return f"No partner store in {where} matches that. The stores there: " + "; ".join(
            s["name"] for s in STORES if s["city"] in cities
        ) + "."
    return f"Partner stores in {where}:\n" + "\n".join(describe(s) for s in stores)


class StoreAgent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        span = TRACER.start_span("store_lookup") if TRACER else None
        try:
            await updater.start_work(
                updater.new_agent_message([new_text_part("Looking up the stores…")])
            )
            if DELAY_S:
                await asyncio.sleep(DELAY_S)
            # Everything the user said in this task: a reply to "which city?" completes
            # the question it answers.
            said = [
                p.text
                for m in list(task.history) + [context.message]
                if m.role == 1  # ROLE_USER
                for p in m.parts
                if p.text
            ]
            reply = answer(" ".join(said))
            if reply is None:
                await updater.requires_input(
                    updater.new_agent_message(
                        [new_text_part(f"Which city are you in? I know the stores in {', '.join(CITIES)}.")]
                    )
                )
                return
            pieces = [reply[i : i + CHUNK] for i in range(0, len(reply), CHUNK)]
            for i, piece in enumerate(pieces):
                await updater.add_artifact(
                    [new_text_part(piece)],
                    artifact_id="answer",
                    name="answer",
                    append=i > 0,
                    last_chunk=i == len(pieces) - 1,
                )
            await updater.complete()
        finally:
            if span:
                span.end()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def app(port):
    card = AgentCard(
        name="Store finder",
        description="Where the Tally partner stores are, their opening hours and services (bakery, pharmacy, coffee, 24-hour opening).",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"http://127.0.0.1:{port}/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="find_stores",
                name="Find stores",
                description="Partner stores by city and brand, with hours and services.",
                tags=["stores", "hours"],
                examples=["Which FreshMart in Springfield is open late?"],
            )
        ],
    )
    handler = DefaultRequestHandlerV2(agent_executor=StoreAgent(), task_store=InMemoryTaskStore(), agent_card=card)
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/")
    server = Starlette(routes=routes)
    if TRACER:
        server = traced(server)
    return server


def traced(inner):
    """Continues the caller's trace (W3C `traceparent`) around each request."""
    from opentelemetry import context, trace
    from opentelemetry.propagate import extract

    async def asgi(scope, receive, send):
        if scope["type"] != "http":
            return await inner(scope, receive, send)
        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
        token = context.attach(extract(carrier))
        try:
            with TRACER.start_as_current_span("a2a " + scope.get("path", "/"), kind=trace.SpanKind.SERVER):
                await inner(scope, receive, send)
        finally:
            context.detach(token)

    return asgi


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8941
    uvicorn.run(app(port), host="127.0.0.1", port=port, log_level="warning")
