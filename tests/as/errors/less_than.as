main agent A {
    main func(input) {
        if input.n < 3 {
            return input
        }
    }
}
