package main

import (
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// durationFlag is a duration flag whose error says what a duration is.
type durationFlag struct{ d *time.Duration }

func (v durationFlag) String() string {
	if v.d == nil {
		return "0s"
	}
	return v.d.String()
}

func (v durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration: write a number with its unit, such as 30s, 500ms, 1m or 1h30m")
	}
	*v.d = d
	return nil
}

// intFlag is a whole-number flag whose error says what it takes.
type intFlag[T int | int64 | uint64] struct{ n *T }

func (v intFlag[T]) String() string {
	if v.n == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*v.n), 10)
}

func (v intFlag[T]) Set(s string) error {
	var zero T
	bits := strconv.IntSize
	if _, ok := any(zero).(int64); ok {
		bits = 64
	}
	if _, ok := any(zero).(uint64); ok {
		u, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return errors.New("not a whole number of 0 or more")
		}
		*v.n = T(u)
		return nil
	}
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return errors.New("not a whole number")
	}
	*v.n = T(n)
	return nil
}

// boolFlag is a boolean flag whose error says what it takes.
type boolFlag struct{ b *bool }

func (v boolFlag) String() string {
	if v.b == nil {
		return "false"
	}
	return strconv.FormatBool(*v.b)
}

func (v boolFlag) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("not true or false")
	}
	*v.b = b
	return nil
}

// IsBoolFlag lets --metrics stand for --metrics=true.
func (v boolFlag) IsBoolFlag() bool { return true }

// logLevel is --log-level: debug, info, warn or error, in any case.
type logLevel struct{ l *slog.Level }

func (v logLevel) String() string {
	if v.l == nil {
		return ""
	}
	return strings.ToLower(v.l.String())
}

func (v logLevel) Set(s string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return errors.New("not a log level: use debug, info, warn or error")
	}
	*v.l = l
	return nil
}

// flagErrors are the flag package's own wordings.
var (
	badValue = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-(\S+): (.*)$`)
	noFlag   = regexp.MustCompile(`^flag provided but not defined: -(\S+)$`)
	noArg    = regexp.MustCompile(`^flag needs an argument: -(\S+)$`)
)

// flagError says what is wrong with a flag as the rest of jetgate's errors
// do: the flag first (--ack-wait), then what it takes.
func flagError(err error) error {
	msg := err.Error()
	if m := badValue.FindStringSubmatch(msg); m != nil {
		return errors.New("--" + m[2] + " " + strconv.Quote(m[1]) + ": " + m[3])
	}
	if m := noFlag.FindStringSubmatch(msg); m != nil {
		return errors.New("--" + m[1] + ": no such flag (jetgate --help lists them)")
	}
	if m := noArg.FindStringSubmatch(msg); m != nil {
		return errors.New("--" + m[1] + ": give it a value")
	}
	return err
}
