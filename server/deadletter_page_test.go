package server

import (
	"errors"
	"testing"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/errs"
)

// page_size runs from 0 (the default) to 100, both ends included.
func TestValidateDeadLetterPageSize(t *testing.T) {
	for _, tc := range []struct {
		size    int32
		want    int
		wantErr bool
	}{
		{0, defaultDeadLetterPage, false},
		{1, 1, false},
		{99, 99, false},
		{100, 100, false},
		{101, 0, true},
		{-1, 0, true},
		{1<<31 - 1, 0, true},
	} {
		_, n, err := validateDeadLetterPage(&jetgatev1.ListDeadLettersRequest{Stream: "ORDERS", Consumer: "billing", PageSize: tc.size})
		switch {
		case tc.wantErr && !errors.Is(err, errs.ErrInvalidArgument):
			t.Errorf("page_size %d: %v; want ErrInvalidArgument", tc.size, err)
		case !tc.wantErr && (err != nil || n != tc.want):
			t.Errorf("page_size %d: %d, %v; want a page of %d", tc.size, n, err, tc.want)
		}
	}
}
