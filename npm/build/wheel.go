package main

import "errors"

// writeWheels writes a Python platform wheel per platform.
func writeWheels(o options, r *result) error {
	return errors.New("-wheels: not yet")
}
