main agent A {
    main func(input) {
        list = [1, 2]
        return list
    }
}
