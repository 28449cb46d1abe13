package server

import (
	"context"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/replica"
)

// The listings name no consumer (ListConsumers) or not even a stream
// (ListStreams): the guard lets a caller in who may read some consumer
// there, and the listing then shows only the consumers it may read.
var listings = map[string]bool{
	jetgatev1.StreamService_ListStreams_FullMethodName:     true,
	jetgatev1.ConsumerService_ListConsumers_FullMethodName: true,
}

type visibleKey struct{}

// visibleTo is what the caller of a listing may see, as the guard put it
// in ctx; without a guard, everything (there are no grants to keep).
func visibleTo(ctx context.Context) replica.Visible {
	if v, ok := ctx.Value(visibleKey{}).(replica.Visible); ok {
		return v
	}
	return func(string, string) bool { return true }
}

// authorizeListing authorizes a listing and puts what its caller may see
// in ctx.
func (g *Guard) authorizeListing(ctx context.Context, method string, req any) (context.Context, error) {
	if g.authn == nil {
		return ctx, nil
	}
	p := auth.Principal(ctx)
	stream := ""
	if r, ok := req.(named); ok {
		stream = r.GetStream()
	}
	if err := g.authn.AuthorizeAny(p, actions[method], stream); err != nil {
		return nil, g.deny(ctx, method, p, req, err)
	}
	authn := g.authn
	return context.WithValue(ctx, visibleKey{}, replica.Visible(func(stream, consumer string) bool {
		if consumer == "" {
			return authn.AuthorizeAny(p, auth.ActionRead, stream) == nil
		}
		return authn.Authorize(p, auth.ActionRead, stream, consumer) == nil
	})), nil
}
