// W3C trace context from a message's headers into its handler, where
// @opentelemetry/api is installed (an optional peer dependency, imported on
// first use). Without it, handlers run as they are.
let loading;
let otel; // null: not installed
function load() {
    loading ??= import("@opentelemetry/api").then((api) => (otel = api), () => (otel = null));
    return loading;
}
const getter = {
    get(carrier, key) {
        const k = Object.keys(carrier).find((h) => h.toLowerCase() === key);
        return k === undefined ? undefined : carrier[k];
    },
    keys(carrier) {
        return Object.keys(carrier).map((k) => k.toLowerCase());
    },
};
/**
 * runInTraceContext runs fn in the context the headers carry (traceparent,
 * tracestate, as the globally registered propagator reads them).
 */
export async function runInTraceContext(headers, fn) {
    const api = otel === undefined ? await load() : otel;
    if (!api) {
        return await fn();
    }
    const ctx = api.propagation.extract(api.ROOT_CONTEXT, headers, getter);
    return await api.context.with(ctx, fn);
}
