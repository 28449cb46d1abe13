package server

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

func (s *consumerService) Pause(ctx context.Context, req *jetgatev1.PauseRequest) (*jetgatev1.PauseResponse, error) {
	until, err := validatePause(req, time.Now())
	if err != nil {
		return nil, s.status(err)
	}
	paused, at, err := s.replica.Pause(ctx, req.GetStream(), req.GetConsumer(), until)
	if err != nil {
		return nil, s.status(err)
	}
	return &jetgatev1.PauseResponse{Paused: paused, PauseUntil: timestamppb.New(at)}, nil
}

func (s *consumerService) Resume(ctx context.Context, req *jetgatev1.ResumeRequest) (*jetgatev1.ResumeResponse, error) {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return nil, s.status(err)
	}
	paused, err := s.replica.Resume(ctx, req.GetStream(), req.GetConsumer())
	if err != nil {
		return nil, s.status(err)
	}
	return &jetgatev1.ResumeResponse{Paused: paused}, nil
}

func (s *consumerService) Unpin(ctx context.Context, req *jetgatev1.UnpinRequest) (*jetgatev1.UnpinResponse, error) {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return nil, s.status(err)
	}
	if _, err := validatePriority(&jetgatev1.FetchRequest{Group: req.GetGroup()}); err != nil {
		return nil, s.status(err)
	}
	if err := s.replica.Unpin(ctx, req.GetStream(), req.GetConsumer(), req.GetGroup()); err != nil {
		return nil, s.status(err)
	}
	return &jetgatev1.UnpinResponse{}, nil
}
