main agent A {
    main func(input) {
        return input
    }

    main func second(input) {
        return input
    }
}
