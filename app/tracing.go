package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/jetgate/jetgate/gateway"
	"github.com/jetgate/jetgate/internal/tracing"
)

// tracingFromEnv sets tracing up as the OTEL_* variables say: on when
// OTEL_TRACES_EXPORTER names an exporter other than none, or an OTLP
// endpoint is given (OTLP is then the default exporter); off otherwise, and
// whenever OTEL_SDK_DISABLED is true. The sampler and resource variables
// are the SDK's own; the service is "jetgate" unless OTEL_SERVICE_NAME says.
func tracingFromEnv(ctx context.Context) (*tracing.Tracing, error) {
	exporter := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") + os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || exporter == "none" || (exporter == "" && endpoint == "") {
		return &tracing.Tracing{}, nil
	}
	for _, name := range strings.Split(exporter, ",") {
		if name = strings.TrimSpace(name); name != "" && name != "otlp" && name != "console" && name != "none" {
			return nil, fmt.Errorf("OTEL_TRACES_EXPORTER %q is not an exporter jetgate has: use otlp (Jaeger and most others take OTLP), console or none", name)
		}
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, err
	}
	if autoexport.IsNoneSpanExporter(exp) {
		return &tracing.Tracing{}, nil
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(serviceName())))
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tracing.New(tp, tp.Shutdown), nil
}

func serviceName() string {
	if s := os.Getenv("OTEL_SERVICE_NAME"); s != "" {
		return s
	}
	return "jetgate"
}

// startTracing sets the process's tracing up: through tp if given, else as
// the environment says. Its spans are flushed after everything else closed.
func (p *process) startTracing(ctx context.Context, tp trace.TracerProvider) error {
	if tp != nil {
		p.trc = tracing.With(tp)
		return nil
	}
	var err error
	if p.trc, err = tracingFromEnv(ctx); err != nil {
		return fmt.Errorf("OpenTelemetry (the OTEL_* variables): %w", err)
	}
	if p.trc.On() {
		p.log.Info("tracing on", "exporter", os.Getenv("OTEL_TRACES_EXPORTER"), "endpoint", os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
		// The SDK's errors (an export that failed) go to the log, not to
		// stderr in a form of their own.
		was := otel.GetErrorHandler()
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { p.log.Warn("OpenTelemetry", "err", err) }))
		p.onClose(func() { otel.SetErrorHandler(was) })
	}
	p.onClose(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.trc.Shutdown(ctx); err != nil {
			p.log.Warn("could not send the last spans", "err", err)
		}
	})
	return nil
}

// grpcTracing is the gRPC server's otelgrpc stats handler; none when off.
// Health checks are left out, as REST's probes are.
func (p *process) grpcTracing() []grpc.ServerOption {
	if !p.trc.On() {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(p.trc.Provider), otelgrpc.WithPropagators(tracing.W3C),
		otelgrpc.WithFilter(filters.Not(filters.HealthCheck()))))}
}

// dialTracing carries the REST side's trace into its streams' gRPC calls
// to the in-process server (innerTracing). That hop records no span:
// otelhttp's is the call's one SERVER span, as for a unary REST call.
func (p *process) dialTracing() []grpc.DialOption {
	if !p.trc.On() {
		return nil
	}
	return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(
		otelgrpc.WithTracerProvider(p.trc.Provider), otelgrpc.WithPropagators(tracing.W3C), otelgrpc.WithFilter(noSpan)))}
}

// innerTracing takes the REST side's trace in on the in-process gRPC
// server, recording no span of its own.
func (p *process) innerTracing() []grpc.ServerOption {
	if !p.trc.On() {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(p.trc.Provider), otelgrpc.WithPropagators(tracing.W3C), otelgrpc.WithFilter(noSpan)))}
}

// noSpan filters every call out of otelgrpc's spans; its propagation stays.
func noSpan(*stats.RPCTagInfo) bool { return false }

// httpTracing wraps the REST side in otelhttp, which reads traceparent and
// tracestate (only those) and records the server span; probes and metrics
// are left out. A span is named by its route, as the semantic conventions
// ask ("POST /v1/streams/{stream}/consumers/{consumer}:fetch", http.route
// the route), not by its path, whose names would make a span name of every
// stream and consumer; a request of no route is named by its method alone.
func (p *process) httpTracing(rest *gateway.REST) http.Handler {
	if !p.trc.On() {
		return rest
	}
	routed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if route := rest.Route(r.Method, r.URL.Path); route != "" {
			trace.SpanFromContext(r.Context()).SetAttributes(semconv.HTTPRoute(route))
		}
		rest.ServeHTTP(w, r)
	})
	return otelhttp.NewHandler(routed, "jetgate", otelhttp.WithTracerProvider(p.trc.Provider),
		otelhttp.WithPropagators(tracing.W3C),
		otelhttp.WithFilter(func(r *http.Request) bool {
			switch r.URL.Path {
			case "/healthz", "/readyz", "/metrics", "/openapi.json":
				return false
			}
			return true
		}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if route := rest.Route(r.Method, r.URL.Path); route != "" {
				return r.Method + " " + route
			}
			return r.Method
		}))
}
