package app

import (
	"crypto/tls"

	"github.com/jetgate/jetgate/internal/tlsfiles"
)

// loadTLS reads the listeners' TLS files (listen.tls), if any: reloaded
// as they change.
func (p *process) loadTLS() error {
	t := p.cfg.Listen.TLS
	if t.Cert == "" {
		return nil
	}
	var err error
	if p.tls, err = tlsfiles.Config(tlsfiles.Files{Cert: t.Cert, Key: t.Key, ClientCA: t.ClientCA}, p.log); err != nil {
		return p.cfg.Errorf("listen.tls", "%v", err)
	}
	return nil
}

// httpTLS is the REST listener's TLS: the listeners', but one that asks for
// a client certificate (listen.tls.client_ca) takes a handshake without one
// here, so that the kubelet's probes, which present none, are answered;
// the gateway requires one of every other request (ClientCertRequired).
func (p *process) httpTLS() *tls.Config {
	if p.tls == nil {
		return nil
	}
	return tlsfiles.CertIfGiven(p.tls)
}
