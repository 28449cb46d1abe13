// Package embedded runs an in-process NATS server with JetStream: the
// gateway's default when it is given no NATS URL, and the server every test
// and the bench run against.
package embedded

import (
	"errors"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// lockFile is the file in a store's directory that Lock holds.
const lockFile = "jetgate.lock"

// Options of an embedded server.
type Options struct {
	Name     string // server name; "" lets the server pick one
	Host     string
	Port     int // -1: a random port
	StoreDir string
	// DontListen takes no network clients: in-process connections only.
	DontListen bool
	// User and Password, when set, are the only credentials the server
	// accepts (in-process connections included).
	User, Password string
}

// Start runs a JetStream server and waits until it takes connections.
// Shut it down with Shutdown and WaitForShutdown.
func Start(o Options) (*server.Server, error) {
	if o.StoreDir == "" {
		return nil, errors.New("the embedded server needs a directory for its store")
	}
	ns, err := server.NewServer(&server.Options{
		ServerName: o.Name,
		Host:       o.Host,
		Port:       o.Port,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		NoSigs:     true,
		NoLog:      true,
		DontListen: o.DontListen,
		Username:   o.User,
		Password:   o.Password,
	})
	if err != nil {
		return nil, err
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("the embedded NATS server did not start in 10s (is the port taken?)")
	}
	return ns, nil
}
