// Package rows owns what a saga's open rows are to the durable-start
// mechanism (package durable): a Due row and the Queue that claims and
// records them. It is apart from durable so that the store (package db),
// which implements Queue, does not link the Temporal SDK that durable's
// dispatcher starts workflows with.
package rows
