// Package server is jetgate's gRPC face: each RPC validates its request,
// calls the replica (internal/replica) and maps its errors to gRPC statuses
// (status.go), one file per service.
package server

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/settle"
)

// leaser is what the consumer service needs of the replica.
type leaser interface {
	Fetch(ctx context.Context, stream, name string, req consumer.FetchRequest) (consumer.FetchResult, error)
	Settle(ctx context.Context, req settle.Request) ([]settle.Outcome, error)
	Consumer(ctx context.Context, stream, name string) (replica.ConsumerStatus, error)
	Redrive(ctx context.Context, stream, name string, seqs []uint64) (replica.RedriveResult, error)
	Consume(ctx context.Context, stream, name string, req consumer.ConsumeRequest, send func([]*consumer.Delivery) error) error
	Pause(ctx context.Context, stream, name string, until time.Time) (bool, time.Time, error)
	Resume(ctx context.Context, stream, name string) (bool, error)
	Unpin(ctx context.Context, stream, name, group string) error
	Seek(ctx context.Context, stream, name string, to replica.SeekTarget) (replica.SeekResult, error)
}

// publisher is what the stream service needs of the replica.
type publisher interface {
	Publish(ctx context.Context, req replica.PublishRequest) (replica.PubAck, error)
	PublishBatch(ctx context.Context, stream string, msgs []replica.PublishRequest) ([]uint64, error)
}

// Limits are the request bounds the services enforce.
type Limits struct {
	MaxBatch    int
	MaxExpires  time.Duration
	MaxNakDelay time.Duration // 0: no bound
	MaxLease    time.Duration // an Extend's longest duration; 0: no bound
	SendStall   time.Duration // how long one Consume response waits to be read
	// Silence ends a Consume stream whose caller answered none of its
	// messages for that long (consumer.ConsumeRequest.Silence); 0: never.
	Silence time.Duration
}

// Register adds jetgate's services, backed by the replica r, to s. Errors
// the callers do not see in full are logged to log. A Consume response
// waits at most stall for its caller to read; 0 is DefaultSendStall.
func Register(s grpc.ServiceRegistrar, r *replica.Replica, log *slog.Logger, stall time.Duration) {
	c, st := services(r, log)
	if stall > 0 {
		c.lim.SendStall = stall
	}
	jetgatev1.RegisterConsumerServiceServer(s, c)
	jetgatev1.RegisterStreamServiceServer(s, st)
}

// RegisterREST is Register for the server the REST side calls: a REST
// Consume caller's reads cannot be seen (the kernel's buffers take the
// stream's writes), so its stream also ends once it answered none of its
// messages for stall.
func RegisterREST(s *grpc.Server, r *replica.Replica, log *slog.Logger, stall time.Duration) {
	c, st := services(r, log)
	c.lim.SendStall = cmp.Or(stall, DefaultSendStall)
	c.lim.Silence = c.lim.SendStall
	jetgatev1.RegisterConsumerServiceServer(s, c)
	jetgatev1.RegisterStreamServiceServer(s, st)
}

func services(r *replica.Replica, log *slog.Logger) (*consumerService, *streamService) {
	lim := Limits{MaxBatch: r.MaxBatch(), MaxExpires: r.MaxExpires(), MaxNakDelay: r.MaxNakDelay(), MaxLease: r.MaxLease(), SendStall: DefaultSendStall}
	e := edge{log: log}
	return &consumerService{edge: e, replica: r, admin: r, list: r, lim: lim}, &streamService{edge: e, replica: r, list: r}
}

type consumerService struct {
	jetgatev1.UnimplementedConsumerServiceServer
	edge
	replica leaser
	admin   admin
	list    lister
	lim     Limits
}

type streamService struct {
	jetgatev1.UnimplementedStreamServiceServer
	edge
	replica publisher
	list    lister
}
