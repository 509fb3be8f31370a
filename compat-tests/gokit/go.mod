module sluice/compat/gokit

go 1.26.0
