main agent A {
    main func(input) {
        loop until input.done < 0 {
            input = input
        }
        repeat * input.n {
            input = input
        }
        return input
    }
}
