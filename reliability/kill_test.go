package reliability

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// process is a jetgate binary running as its own process.
type process struct {
	cmd                *exec.Cmd
	cons               jetgatev1.ConsumerServiceClient
	strm               jetgatev1.StreamServiceClient
	grpcAddr, httpAddr string
}

func buildJetgate(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "jetgate")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/jetgate/jetgate/cmd/jetgate").CombinedOutput()
	if err != nil {
		t.Fatalf("build jetgate: %v\n%s", err, out)
	}
	return bin
}

func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	grpcAddr := "127.0.0.1:" + strconv.Itoa(natstest.FreePort(t))
	httpAddr := "127.0.0.1:" + strconv.Itoa(natstest.FreePort(t))
	args = append(args, "--grpc-addr", grpcAddr, "--http-addr", httpAddr, "--log-level", "warn")
	logFile, err := os.Create(filepath.Join(t.TempDir(), "jetgate.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			logTail(t, logFile.Name(), grpcAddr)
		}
	})
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	p := &process{cmd: cmd, cons: jetgatev1.NewConsumerServiceClient(conn), strm: jetgatev1.NewStreamServiceClient(conn),
		grpcAddr: grpcAddr, httpAddr: httpAddr}
	natstest.Eventually(t, 20*time.Second, "jetgate serving", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := p.cons.GetConsumer(ctx, &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: consumer})
		return err == nil
	})
	return p
}

// logTail logs the last lines a failed test's jetgate process wrote.
func logTail(t *testing.T, name, process string) {
	const keep = 40
	b, err := os.ReadFile(name)
	if err != nil {
		t.Logf("jetgate %s: no log: %v", process, err)
		return
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > keep {
		t.Logf("jetgate %s: %d lines before these left out", process, len(lines)-keep)
		lines = lines[len(lines)-keep:]
	}
	t.Logf("jetgate %s logged:\n%s", process, strings.Join(lines, "\n"))
}

// processFixture builds jetgate, starts NATS in the test's process with
// the stream, and writes the token key file the jetgate processes share.
func processFixture(t *testing.T) (bin string, ns *natsserver.Server, nc *nats.Conn, keyFile string) {
	t.Helper()
	bin = buildJetgate(t)
	ns = natstest.Start(t)
	nc = natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	keyFile = filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keyFile, []byte("a-test-secret-of-forty-characters-long!!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return bin, ns, nc, keyFile
}

func TestFaultGatewayKilledWithLeasesOutstanding(t *testing.T) {
	bin, ns, nc, keyFile := processFixture(t)
	const ackWait = 4 * time.Second
	args := []string{"--nats-url", ns.ClientURL(), "--token-key-file", keyFile, "--ack-wait", ackWait.String()}
	p1 := startProcess(t, bin, args...)
	n := scale(100, 1000)
	chk := NewChecker()
	d := &Driver{Stream: stream, Consumer: consumer, Publishers: []jetgatev1.StreamServiceClient{p1.strm},
		Checker: chk, RPCTimeout: 2 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := d.Publish(ctx, t.Name(), n); err != nil {
		t.Fatal(err)
	}
	var leased []*jetgatev1.Message
	for len(leased) < n {
		resp, err := p1.cons.Fetch(ctx, &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: int32(n - len(leased)), Expires: durationpb.New(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range resp.GetMessages() {
			chk.Delivered(string(m.GetData()), time.Now())
		}
		leased = append(leased, resp.GetMessages()...)
	}
	fetched := time.Now()

	if err := p1.cmd.Process.Kill(); err != nil { // SIGKILL: no goodbye
		t.Fatal(err)
	}
	_ = p1.cmd.Wait()
	p2 := startProcess(t, bin, args...)

	// Tokens issued before the kill still settle, through the new process.
	half := leased[:n/2]
	var toks []string
	for _, m := range half {
		toks = append(toks, m.GetToken())
	}
	resp, err := p2.cons.Ack(ctx, &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: toks})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetFailures()) > 0 {
		t.Fatalf("%d old tokens failed after the restart, first: %s", len(resp.GetFailures()), resp.GetFailures()[0].GetReason())
	}
	for _, m := range half {
		chk.Acked(string(m.GetData()))
	}
	// The other half comes back once ack_wait has passed.
	d.Consumers = []jetgatev1.ConsumerServiceClient{p2.cons}
	d.Batch, d.Expires = 50, time.Second
	published := make(chan struct{})
	close(published)
	if err := d.Consume(ctx, 2, published); err != nil {
		t.Fatal(err)
	}
	r := chk.Report()
	t.Logf("%s: %v; came back %v after the fetch (ack_wait %v)", t.Name(), r, r.RedeliveryP50, ackWait)
	if r.Lost != 0 || r.Redelivered != n-n/2 {
		t.Fatalf("lost %d, redelivered %d of the %d left unanswered", r.Lost, r.Redelivered, n-n/2)
	}
	if since := time.Since(fetched); since < ackWait-time.Second {
		t.Fatalf("unanswered messages came back %v after the fetch, before ack_wait", since)
	}
	// An old token of a redelivered message is void now.
	late, err := p2.cons.Ack(ctx, &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: []string{leased[n-1].GetToken()}})
	if err != nil || len(late.GetFailures()) != 1 || late.GetFailures()[0].GetReason() != "LEASE_EXPIRED" {
		t.Fatalf("old token after redelivery: %v %v", late.GetFailures(), err)
	}
	assertDrained(t, nc, r)
}
