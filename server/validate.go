package server

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// maxName bounds stream and consumer names, as the NATS server does.
const maxName = 255

func validateNames(stream, consumer string) error {
	for _, f := range [...]struct{ field, v string }{{"stream", stream}, {"consumer", consumer}} {
		switch {
		case f.v == "":
			return fmt.Errorf("%w: %s is required", ErrInvalidArgument, f.field)
		case len(f.v) > maxName:
			return fmt.Errorf("%w: %s is longer than %d bytes", ErrInvalidArgument, f.field, maxName)
		case strings.ContainsAny(f.v, ".*> /\\") || strings.ContainsFunc(f.v, unicode.IsControl) || !utf8.ValidString(f.v):
			return fmt.Errorf("%w: %s %q is not a valid NATS name (no dots, wildcards, slashes or spaces)", ErrInvalidArgument, f.field, f.v)
		}
	}
	return nil
}

// validateFetch checks a Fetch and applies its defaults.
func validateFetch(req *jetgatev1.FetchRequest, lim Limits) (FetchRequest, error) {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return FetchRequest{}, err
	}
	fr := FetchRequest{Batch: int(req.GetBatch()), Expires: DefaultExpires}
	switch {
	case fr.Batch < 0:
		return FetchRequest{}, fmt.Errorf("%w: batch must not be negative", ErrInvalidArgument)
	case fr.Batch == 0:
		fr.Batch = 1
	case fr.Batch > lim.MaxBatch:
		return FetchRequest{}, fmt.Errorf("%w: batch %d is above the maximum of %d", ErrInvalidArgument, fr.Batch, lim.MaxBatch)
	}
	if e := req.GetExpires(); e != nil {
		if err := e.CheckValid(); err != nil || e.AsDuration() < 0 {
			return FetchRequest{}, fmt.Errorf("%w: expires must be a duration of 0s or more", ErrInvalidArgument)
		}
		fr.Expires = e.AsDuration()
	}
	fr.Expires = min(fr.Expires, lim.MaxExpires)
	if req.MaxBytes != nil {
		if req.GetMaxBytes() <= 0 {
			return FetchRequest{}, fmt.Errorf("%w: max_bytes must be positive when set", ErrInvalidArgument)
		}
		fr.MaxBytes = req.GetMaxBytes()
	}
	return fr, nil
}

func validateSettle(req settleRequest) error {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return err
	}
	switch n := len(req.GetTokens()); {
	case n == 0:
		return fmt.Errorf("%w: tokens: give at least one token", ErrInvalidArgument)
	case n > MaxTokens:
		return fmt.Errorf("%w: tokens: %d given; at most %d per request", ErrInvalidArgument, n, MaxTokens)
	}
	return nil
}

// maxHeaderBytes bounds the headers of one published message.
const maxHeaderBytes = 64 << 10

func validatePublish(req *jetgatev1.PublishRequest) (PublishRequest, error) {
	if req.GetStream() == "" {
		return PublishRequest{}, fmt.Errorf("%w: stream is required", ErrInvalidArgument)
	}
	size := 0
	for k, v := range req.GetHeaders() {
		if k == "" || strings.ContainsAny(k, ": \t\r\n") || !isASCIIPrintable(k) {
			return PublishRequest{}, fmt.Errorf("%w: header name %q is not a valid header name", ErrInvalidArgument, k)
		}
		for _, s := range v.GetValues() {
			if strings.ContainsAny(s, "\r\n") {
				return PublishRequest{}, fmt.Errorf("%w: header %q has a value with a line break", ErrInvalidArgument, k)
			}
			size += len(k) + len(s) + 4
		}
	}
	if size > maxHeaderBytes {
		return PublishRequest{}, fmt.Errorf("%w: headers are %d bytes; at most %d are allowed", ErrInvalidArgument, size, maxHeaderBytes)
	}
	return PublishRequest{
		Stream:  req.GetStream(),
		Subject: req.GetSubject(),
		Data:    req.GetData(),
		Header:  headerOf(req.GetHeaders()),
		MsgID:   req.GetMsgId(),
	}, nil
}

func isASCIIPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
