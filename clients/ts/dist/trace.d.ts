/**
 * runInTraceContext runs fn in the context the headers carry (traceparent,
 * tracestate, as the globally registered propagator reads them).
 */
export declare function runInTraceContext<T>(headers: Record<string, string[]>, fn: () => T): Promise<Awaited<T>>;
