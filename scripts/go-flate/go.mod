module rudder.test/go-flate

go 1.21
