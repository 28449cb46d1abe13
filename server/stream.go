package server

import (
	"context"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

func (s *streamService) Publish(ctx context.Context, req *jetgatev1.PublishRequest) (*jetgatev1.PublishResponse, error) {
	pr, err := validatePublish(req)
	if err != nil {
		return nil, s.status(err)
	}
	ack, err := s.replica.Publish(ctx, pr)
	if err != nil {
		return nil, s.status(err)
	}
	return &jetgatev1.PublishResponse{Stream: ack.Stream, Seq: ack.Seq, Duplicate: ack.Duplicate}, nil
}

func (s *streamService) PublishBatch(ctx context.Context, req *jetgatev1.PublishBatchRequest) (*jetgatev1.PublishBatchResponse, error) {
	msgs, err := validatePublishBatch(req)
	if err != nil {
		return nil, s.status(err)
	}
	seqs, err := s.replica.PublishBatch(ctx, req.GetStream(), msgs)
	if err != nil {
		return nil, s.status(err)
	}
	return &jetgatev1.PublishBatchResponse{Stream: req.GetStream(), Seqs: seqs}, nil
}
