package server

import (
	"context"
	"fmt"
	"time"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/replica"
)

func (s *consumerService) Seek(ctx context.Context, req *jetgatev1.SeekRequest) (*jetgatev1.SeekResponse, error) {
	to, err := validateSeek(req)
	if err != nil {
		return nil, s.status(err)
	}
	res, err := s.replica.Seek(ctx, req.GetStream(), req.GetConsumer(), to)
	if err != nil {
		return nil, s.status(err)
	}
	return &jetgatev1.SeekResponse{ResetSequence: res.ResetSeq, State: consumerStateOf(res.Info)}, nil
}

// validateSeek checks a Seek names its consumer and exactly one target.
func validateSeek(req *jetgatev1.SeekRequest) (replica.SeekTarget, error) {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return replica.SeekTarget{}, err
	}
	switch t := req.GetTarget().(type) {
	case *jetgatev1.SeekRequest_Sequence:
		if t.Sequence == 0 {
			return replica.SeekTarget{}, fmt.Errorf("%w: sequence must be 1 or more", errs.ErrInvalidArgument)
		}
		return replica.SeekTarget{Seq: t.Sequence}, nil
	case *jetgatev1.SeekRequest_Time:
		if t.Time == nil || t.Time.CheckValid() != nil {
			return replica.SeekTarget{}, fmt.Errorf("%w: time must be a valid timestamp (RFC 3339 over REST)", errs.ErrInvalidArgument)
		}
		// Any time before 1970 (0001-01-01T00:00:00Z, "from the beginning",
		// among them) is before the first message: as 1970, which the
		// server reads in nanoseconds without the overflow of a time before
		// 1678, taken for one after 2262 (and every message skipped).
		at := t.Time.AsTime()
		if epoch := time.Unix(0, 0).UTC(); at.Before(epoch) {
			at = epoch
		}
		return replica.SeekTarget{Time: at}, nil
	case *jetgatev1.SeekRequest_AckFloor:
		if !t.AckFloor {
			return replica.SeekTarget{}, fmt.Errorf("%w: ack_floor must be true when set", errs.ErrInvalidArgument)
		}
		return replica.SeekTarget{AckFloor: true}, nil
	}
	return replica.SeekTarget{}, fmt.Errorf("%w: name where to seek: one of sequence, time or ack_floor (sequence, time, ackFloor over REST)", errs.ErrInvalidArgument)
}
