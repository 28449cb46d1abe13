package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// FloorEnv makes a child process of the bench the pass-through gateway: a
// gRPC ConsumerService of Fetch, Ack and Consume alone, straight onto a
// durable of its own, with no lease, no token and no check. A Fetch is one
// nats.go Fetch, an Ack one fire-and-forget +ACK a message, a Consume
// nats.go's Consume with each burst sent as it comes. No gateway process
// can do less: it is the floor under every ratio of the gateway modes.
const FloorEnv = "JETGATE_BENCH_FLOOR"

// The floor's modes: grpc's and consume's clients, against the floor.
const (
	ModeFloor        = "floor"         // pass-through Fetch + Ack, its own process
	ModeFloorConsume = "floor-consume" // pass-through Consume + Ack, its own process
)

type floorConfig struct {
	NATSURL  string `json:"nats_url"`
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"` // jetgate's, whose configuration the floor's durable copies
	Durable  string `json:"durable"`
	Subject  string `json:"subject"`
}

// newFloorMode starts the floor process and returns the mode measuring it
// with the client of kind (ModeGRPC or ModeConsume).
func newFloorMode(ctx context.Context, name, kind, subject string, js jetstream.JetStream, o Options) (*gatewayMode, error) {
	if js == nil {
		return nil, errors.New("the floor modes need the NATS server (--nats-url)")
	}
	cfg := floorConfig{NATSURL: o.NATSURL, Stream: o.Stream, Consumer: o.Consumer, Durable: o.Consumer + "-" + name, Subject: subject}
	b, _ := json.Marshal(cfg)
	p, err := startChild(o.ReplicaCommand, FloorEnv, string(b))
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	addr, err := p.readLine(replicaStartLimit)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("floor did not start: %w", err), p.stop())
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, errors.Join(err, p.stop())
	}
	fo := o
	fo.Consumer = cfg.Durable
	m := newGatewayMode(name, jetgatev1.NewConsumerServiceClient(conn), js, fo)
	m.kind, m.pid = kind, p.cmd.Process.Pid
	m.closing = func() {
		_ = conn.Close()
		_ = p.stop()
		_ = js.DeleteConsumer(context.Background(), o.Stream, cfg.Durable)
	}
	return m, nil
}

// serveFloor is the floor process's side.
func serveFloor(ctx context.Context, cfg string, in io.Reader, out io.Writer) error {
	var c floorConfig
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		return fmt.Errorf("%s: %w", FloorEnv, err)
	}
	nc, err := nats.Connect(c.NATSURL, nats.Name("jetgate-bench-floor"))
	if err != nil {
		return err
	}
	defer nc.Close()
	m := &natsMode{nc: nc, stream: c.Stream, name: c.Durable}
	if err := m.bind(ctx, c.Subject, Options{Stream: c.Stream, Consumer: c.Consumer}); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	jetgatev1.RegisterConsumerServiceServer(srv, &floorServer{nc: nc, cons: m.cons})
	go func() { _ = srv.Serve(l) }()
	fmt.Fprintln(out, l.Addr().String())
	_, _ = io.Copy(io.Discard, in) // until the parent closes it
	srv.Stop()
	return nil
}

type floorServer struct {
	jetgatev1.UnimplementedConsumerServiceServer
	nc   *nats.Conn
	cons jetstream.Consumer
}

// Fetch takes what is there at once (no_wait), else waits for up to the
// batch until expires, as jetgate's Fetch does.
func (f *floorServer) Fetch(_ context.Context, req *jetgatev1.FetchRequest) (*jetgatev1.FetchResponse, error) {
	out, err := f.fetch(f.cons.FetchNoWait(int(req.GetBatch())))
	if err != nil || len(out.Messages) > 0 {
		return out, err
	}
	return f.fetch(f.cons.Fetch(int(req.GetBatch()), jetstream.FetchMaxWait(max(req.GetExpires().AsDuration(), time.Millisecond))))
}

func (f *floorServer) fetch(batch jetstream.MessageBatch, err error) (*jetgatev1.FetchResponse, error) {
	if err != nil {
		return nil, err
	}
	var out jetgatev1.FetchResponse
	for msg := range batch.Messages() {
		out.Messages = append(out.Messages, &jetgatev1.Message{Token: msg.Reply(), Subject: msg.Subject(), Data: msg.Data()})
	}
	return &out, batch.Error()
}

func (f *floorServer) Ack(_ context.Context, req *jetgatev1.AckRequest) (*jetgatev1.AckResponse, error) {
	for _, t := range req.GetTokens() {
		if err := f.nc.Publish(t, []byte("+ACK")); err != nil {
			return nil, err
		}
	}
	return &jetgatev1.AckResponse{}, nil
}

func (f *floorServer) Consume(req *jetgatev1.ConsumeRequest, st grpc.ServerStreamingServer[jetgatev1.ConsumeResponse]) error {
	burst := make(chan *jetgatev1.Message, 4*int(req.GetMaxMessages())+1)
	cc, err := f.cons.Consume(func(msg jetstream.Msg) {
		burst <- &jetgatev1.Message{Token: msg.Reply(), Subject: msg.Subject(), Data: msg.Data()}
	}, jetstream.PullMaxMessages(int(req.GetMaxMessages())))
	if err != nil {
		return err
	}
	defer cc.Stop()
	beat := time.NewTicker(max(req.GetHeartbeat().AsDuration(), 100*time.Millisecond))
	defer beat.Stop()
	for {
		select {
		case <-st.Context().Done():
			return nil
		case <-beat.C: // as jetgate's: an idle stream's caller hears from it
			if err := st.Send(&jetgatev1.ConsumeResponse{}); err != nil {
				return err
			}
		case m := <-burst:
			resp := &jetgatev1.ConsumeResponse{Messages: []*jetgatev1.Message{m}}
		more:
			for {
				select {
				case m := <-burst:
					resp.Messages = append(resp.Messages, m)
				default:
					break more
				}
			}
			if err := st.Send(resp); err != nil {
				return err
			}
		}
	}
}
