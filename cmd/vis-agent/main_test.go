package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/sandbox/repair/repairtest"
)

func TestMain(m *testing.M) {
	cleanup, err := testenv.OwnHome()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	repairtest.StopWorkers()
	cleanup()
	os.Exit(code)
}
