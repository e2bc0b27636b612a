main agent A {
    main func(input) {
        return "no end
    }
}
